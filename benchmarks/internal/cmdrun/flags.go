package cmdrun

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Bench is what every store and informer benchmark is told: how many pods,
// which implementations, and where the bolt store's file goes.
type Bench struct {
	// N is -n: the number of pods (default 100,000). The program checks
	// that it is positive, with its other numbers.
	N int
	// Impls is -impl: the implementations measured, the baseline first
	// (default every one the program knows, in its order).
	Impls []string
	// Dir is -dir: the directory of the bolt store's file (default the
	// temporary directory).
	Dir string
}

// Flags defines -n, -impl and -dir on fs for b. known lists the
// implementations -impl accepts, the baseline first; what names them in
// -impl's usage ("stores", "informers"), and note, if not empty, follows
// it.
func (b *Bench) Flags(fs *flag.FlagSet, known []string, what, note string) {
	fs.IntVar(&b.N, "n", 100000, "number of pods")
	usage := "comma-separated `" + what + "` to measure, the baseline first"
	if note != "" {
		usage += " (" + note + ")"
	}
	NamesVar(fs, &b.Impls, "impl", known, usage)
	fs.StringVar(&b.Dir, "dir", os.TempDir(), "directory for the bolt store's file")
}

// NamesVar defines the flag name on fs: a comma-separated list of names,
// each one of known, stored in *dst in the order given. Its default is
// every name of known, in their order. An unknown name is a bad flag:
// fs says which, and lists known.
func NamesVar(fs *flag.FlagSet, dst *[]string, name string, known []string, usage string) {
	*dst = slices.Clone(known)
	fs.Var(namesValue{dst: dst, known: known}, name, usage)
}

// namesValue is the flag.Value of NamesVar.
type namesValue struct {
	dst   *[]string
	known []string
}

func (v namesValue) String() string {
	if v.dst == nil {
		return ""
	}
	return strings.Join(*v.dst, ",")
}

func (v namesValue) Set(s string) error {
	var names []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(v.known, name) {
			return fmt.Errorf("%q: want some of %v", name, v.known)
		}
		names = append(names, name)
	}
	*v.dst = names
	return nil
}
