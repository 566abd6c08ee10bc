package measure

import (
	"testing"
	"time"
)

func TestEveryCallsUntilStop(t *testing.T) {
	calls := 0 // written by the loop, read after Stop: -race checks Stop waits
	called := make(chan struct{}, 1)
	p := Every(time.Millisecond, func() {
		calls++
		select {
		case called <- struct{}{}:
		default:
		}
	})
	<-called
	<-called
	if !p.Stop() {
		t.Fatal("first Stop = false, want true")
	}
	if calls < 2 {
		t.Fatalf("calls = %d after two were seen", calls)
	}
	if p.Stop() {
		t.Error("second Stop = true, want false")
	}
}
