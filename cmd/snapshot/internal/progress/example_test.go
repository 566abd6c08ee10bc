package progress_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
)

func ExampleBar() {
	// A bar is drawn on a terminal only; a nil bar ignores every call.
	isTerminal := false // term.IsTerminal(int(os.Stderr.Fd())) in a real program
	var bar *progress.Bar
	if isTerminal {
		bar = progress.New(os.Stderr, progress.Options{Label: "list pods", Total: 100})
	}
	for range 100 {
		bar.Add(1)
	}
	bar.Finish()

	var line strings.Builder
	bar = progress.New(&line, progress.Options{Label: "backup", Total: 4 << 20, Bytes: true, Width: 8})
	bar.Add(1 << 20)
	fmt.Printf("%q\n", line.String())
	// Output:
	// "\rbackup [==>     ]  25% 1.0 MiB/4.0 MiB\x1b[K"
}
