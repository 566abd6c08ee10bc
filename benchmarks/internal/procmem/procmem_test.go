package procmem

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	status := "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\nRssAnon:\t 512 kB\nRssFile:\t 500 kB\nRssShmem:\t 12 kB\n"
	u, err := parse([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if u != (Usage{Anon: 512 << 10, File: 500 << 10, Shmem: 12 << 10, HWM: 2048 << 10}) {
		t.Errorf("parsed %+v", u)
	}
	if _, err := parse([]byte("Name:\tx\nVmRSS:\t 1 kB\n")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("status without RssAnon: %v", err)
	}
	if _, err := parse([]byte("RssAnon:\t x kB\n")); err == nil {
		t.Error("a bad number parsed")
	}
}

// sink keeps the reads of the mapping.
var sink byte

// TestSamplerSeesAnonAndFilePages maps a file and touches its pages, then
// allocates and touches anonymous memory: the sampler reports each kind
// apart.
func TestSamplerSeesAnonAndFilePages(t *testing.T) {
	if _, err := Read(0); errors.Is(err, ErrUnsupported) {
		t.Skip("this kernel does not split RssAnon and RssFile")
	}
	const size = 64 << 20
	f, err := os.CreateTemp(t.TempDir(), "map")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{7}, size)); err != nil {
		t.Fatal(err)
	}
	s, err := Start(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	base, _ := s.Peak()

	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < size; i += 4096 {
		sink += m[i]
	}
	s.Reset()
	mapped, _ := s.Peak()
	if err := syscall.Munmap(m); err != nil {
		t.Fatal(err)
	}
	// A file on tmpfs is resident as shared memory.
	if mapped.File+mapped.Shmem < base.File+base.Shmem+size/2 || mapped.Anon > base.Anon+size/4 {
		t.Errorf("after touching a %d-byte mapping: %+v (before: %+v)", size, mapped, base)
	}

	anon := make([]byte, size)
	for i := 0; i < size; i += 4096 {
		anon[i] = 1
	}
	s.Reset()
	touched, _ := s.Peak()
	if touched.Anon < base.Anon+size/2 {
		t.Errorf("anonymous resident memory %d after touching %d bytes (before: %d)", touched.Anon, size, base.Anon)
	}
	_ = anon[size-1]
	peak, err := s.Stop()
	if err != nil || peak.Anon < touched.Anon || peak.HWM < peak.Anon {
		t.Errorf("Stop: %+v, %v", peak, err)
	}
}

func TestCPU(t *testing.T) {
	d, err := parseStatCPU([]byte("42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 1 0 5 1000 10"))
	if err != nil || d != 3800*time.Millisecond {
		t.Errorf("parsed %v, %v; want 3.8s", d, err)
	}
	if _, err := parseStatCPU([]byte("42 (x) S 1")); err == nil {
		t.Error("a short stat line parsed")
	}
	start, err := CPU(0)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if now, _ := CPU(0); now > start {
			return
		}
		x := 0
		for i := range 1 << 20 {
			x += i
		}
		sink += byte(x)
	}
	t.Error("this process's CPU time did not grow while it spun")
}
