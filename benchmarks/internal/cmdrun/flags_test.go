package cmdrun

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestBenchFlags(t *testing.T) {
	known := []string{"client-go", "memory", "bolt"}
	for _, tc := range []struct {
		name      string
		args      []string
		want      Bench
		stderrHas string // a bad flag: what fs says
	}{
		{name: "defaults", want: Bench{N: 100000, Impls: known, Dir: os.TempDir()}},
		{name: "given", args: []string{"-n", "5", "-impl", "bolt, client-go", "-dir", "/d"}, want: Bench{N: 5, Impls: []string{"bolt", "client-go"}, Dir: "/d"}},
		{name: "unknown implementation", args: []string{"-impl", "client-go,redis"}, stderrHas: `invalid value "client-go,redis" for flag -impl: "redis": want some of [client-go memory bolt]`},
		{name: "empty implementation", args: []string{"-impl", ""}, stderrHas: `flag -impl: "": want some of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			fs := FlagSet("bench", &stderr)
			var b Bench
			b.Flags(fs, known, "stores", "")
			err := Parse(fs, tc.args)
			if tc.stderrHas != "" {
				if !errors.Is(err, ErrUsage) || !strings.Contains(stderr.String(), tc.stderrHas) {
					t.Fatalf("Parse = %v, stderr %q; want ErrUsage, stderr holding %q", err, stderr.String(), tc.stderrHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.N != tc.want.N || !slices.Equal(b.Impls, tc.want.Impls) || b.Dir != tc.want.Dir {
				t.Errorf("parsed %+v, want %+v", b, tc.want)
			}
		})
	}
}

// The usage names the implementations and lists the default.
func TestBenchFlagsUsage(t *testing.T) {
	var stderr bytes.Buffer
	fs := FlagSet("bench", &stderr)
	var b Bench
	b.Flags(fs, []string{"a", "b"}, "stores", "b: the other one")
	fs.PrintDefaults()
	want := "-impl stores\n    \tcomma-separated stores to measure, the baseline first (b: the other one) (default a,b)"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("usage:\n%s\nwant it to hold\n%s", stderr.String(), want)
	}
	// The default is a copy: setting the flag does not change known.
	known := []string{"a", "b"}
	fs = FlagSet("bench", &stderr)
	var names []string
	NamesVar(fs, &names, "cases", known, "")
	names[0] = "x"
	if known[0] != "a" {
		t.Error("NamesVar's default shares known's array")
	}
}
