package reflector

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// TestDefaultWatchErrorHandler: an error that ended a watch the reflector
// watches again is logged at info level, as client-go's reflector logs
// the end of such a watch; every other error is client-go's handler's, an
// error log line.
func TestDefaultWatchErrorHandler(t *testing.T) {
	identity := cache.NewReflectorWithOptions(nil, nil, nil, cache.ReflectorOptions{Name: "pods", TypeDescription: "*v1.Pod"})
	lost := errors.New("http2: client connection lost")
	for _, c := range []struct {
		name      string
		err       error
		want      string
		wantError bool
	}{
		{"watch ended", watchEnded{lost}, "Warning: watch ended with error", false},
		{"watch closed at once", watchEnded{&cache.VeryShortWatchError{Name: "pods"}}, "Warning: watch ended with error", false},
		{"forbidden list", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")), "Failed to watch", true},
		{"unwrapped lost connection", lost, "Failed to watch", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			DefaultWatchErrorHandler(klog.NewContext(t.Context(), logger), identity, c.err)
			logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			if !strings.Contains(logged, c.want) || strings.Contains(logged, "ERROR") != c.wantError {
				t.Fatalf("logged %q, want %q at %s level", logged, c.want, map[bool]string{true: "error", false: "info"}[c.wantError])
			}
		})
	}
}
