package codec_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/codec"
)

// TestDecodeFaultPanicsOn checks that a memory fault reading the data (a
// mapped file truncated under it, with debug.SetPanicOnFault on) is not
// turned into ErrDecode, as a decoder's own panic is, but panics on to
// the caller that mapped the file, which knows the file is damaged.
func TestDecodeFaultPanicsOn(t *testing.T) {
	for _, c := range []codec.Codec{codec.Protobuf(scheme.Scheme), codec.JSON(scheme.Scheme)} {
		t.Run(c.Name(), func(t *testing.T) {
			data, err := c.Encode(nil, testkit.Pod("a", "7"))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "mapped")
			size := 2 * os.Getpagesize()
			buf := make([]byte, size)
			copy(buf, data)
			if err := os.WriteFile(path, buf, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			mapped, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = syscall.Munmap(mapped) }()
			if err := os.Truncate(path, 0); err != nil { // every byte of mapped now faults
				t.Fatal(err)
			}
			r, err := decodeRecovering(c, mapped[:len(data)])
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				t.Fatalf("Decode of faulting data: panic %v, error %v; want the fault to panic on", r, err)
			}
		})
	}
}

// decodeRecovering decodes data with faults turned into panics, and
// returns what it recovered, or Decode's error.
func decodeRecovering(c codec.Codec, data []byte) (r any, err error) {
	defer func() { r = recover() }()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	_, err = c.Decode(data)
	return nil, err
}

// TestDecoderNilDereferenceUnderFaults checks that a decoder's own nil
// pointer dereference stays an ErrDecode with debug.SetPanicOnFault on:
// it is not taken for a fault reading the data.
func TestDecoderNilDereferenceUnderFaults(t *testing.T) {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Fragile"}, &fragile{})
	c := codec.Protobuf(s)
	data, err := c.Encode(nil, &fragile{})
	if err != nil {
		t.Fatal(err)
	}
	nilDeref = true
	defer func() { nilDeref = false }()
	r, err := decodeRecovering(c, data)
	if r != nil || !errors.Is(err, codec.ErrDecode) {
		t.Fatalf("Decode with a nil dereference: panic %v, error %v; want ErrDecode", r, err)
	}
}
