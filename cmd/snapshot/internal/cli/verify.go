package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// verifyOptions is `snapshot verify FILE`.
type verifyOptions struct {
	fileCommand
}

func newVerifyCommand(c command) *cobra.Command {
	o := &verifyOptions{fileCommand: c.file()}
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check a cache file for corruption and inconsistencies",
		Long: `Check everything a cache file promises:

  - the bbolt structure: meta pages, every page reachable from the root, the freelist;
  - each resource's metadata: readable, naming its own bucket, a known schema version
    and state, sorted index names, the recorded object count equal to the items;
  - a codec this snapshot knows for every resource (a resource it cannot decode is a
    problem: it was not checked);
  - every record against its checksum (CRC-32C): each object's envelope (payload,
    resourceVersion, UID) and item entry, each index entry, each resource's metadata
    and live pointer; a byte damaged on disk inside a value is reported with the
    object's key ("checksum key ...");
  - every item: it has an envelope of its own, its envelope and payload decode, and the
    payload's resourceVersion is the envelope's;
  - every envelope belongs to an item, and the envelope sequence is ahead of every id;
  - every index entry against its item and the item's reverse entry, and back.

Each problem found is printed on standard output; the command then exits with code 6.
The payloads of sealed resources are decoded with the keys of --key-file. Without
--key-file they are not, which standard error says (exit code 0 if nothing else is
wrong); objects sealed with a key that --key-file lacks are not decoded either, and are
not problems of the file: the command names the missing key IDs and exits with code 8
(6 if it found problems).
It reads every object, streaming: memory grows by 8 bytes per object (the envelope
ids it cross-checks), time with the file.`,
		Example:           `  snapshot verify cache.db && echo consistent`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeFiles(1),
		RunE:              runE(o),
	}
	return cmd
}

func (o *verifyOptions) Validate() error { return nil }

// countingCodec counts the payloads Verify decodes, for the progress bar
// and the summary.
type countingCodec struct {
	codec.Codec
	decoded *atomic.Int64
	bar     *progress.Bar
}

func (c countingCodec) Decode(data []byte) (runtime.Object, error) {
	c.bar.Add(1)
	obj, err := c.Codec.Decode(data)
	if err == nil {
		c.decoded.Add(1)
	}
	return obj, err
}

func (o *verifyOptions) Run(ctx context.Context) (err error) {
	defer streamingGC()()
	var decoded atomic.Int64
	var bar *progress.Bar
	f, err := openSnapshot(ctx, o.env, o.File, openOptions{Timeout: o.common.LockTimeout, KeyFile: o.common.KeyFile})
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	resolver := func(name string) (codec.Codec, error) {
		c, err := f.codecs(name)
		if err != nil {
			return nil, err
		}
		return counting(c, &decoded, bar), nil
	}
	var total int64
	names := map[string]string{}
	// sealed holds the sealed resources without --key-file; keyed those
	// with objects sealed with keys --key-file does not hold.
	sealed := map[string]bool{}
	keyed := map[string]keyCheck{}
	for _, info := range f.all {
		_, cerr := f.codecs(info.Codec)
		sealed[info.Identity.String()] = errors.Is(cerr, errSealed)
		if isSealed(info) && cerr == nil && info.Problem == "" {
			k, err := f.keys(ctx, info)
			if err != nil {
				return err
			}
			if len(k.missing) > 0 {
				keyed[info.Identity.String()] = k
			}
		}
		total += info.Objects
		if info.Problem == "" {
			names[info.Identity.String()] = displayName(info)
		}
	}
	problems := 0
	// undecrypted counts, per sealed resource, the objects sealed with a
	// key --key-file does not hold: not a problem of the file.
	undecrypted := map[string]int{}
	report := func(resource, what string) {
		problems++
		fmt.Fprintf(o.env.Stdout, "%s: %s\n", resource, what)
	}

	// The structure first: Verify must not walk a damaged tree.
	if err := inspect.CheckFile(ctx, o.File); err != nil {
		if !errors.Is(err, bolt.ErrCorrupt) {
			return err
		}
		report("file", "bbolt structure: "+err.Error())
		return mark(ErrProblems, "%s: the bbolt structure is damaged; objects and indexes were not checked", o.File)
	}
	// bbolt falls back to the other meta page without a word.
	if pages, chosen, err := inspect.MetaPages(o.File); err == nil && chosen >= 0 {
		for i, p := range pages {
			if !p.Valid {
				report("file", fmt.Sprintf("bbolt meta page %d is damaged (%s): the file is read through meta page %d (transaction %d); "+
					"a transaction the damaged page recorded after it is lost", i, p.Problem, chosen, pages[chosen].TxID))
			}
		}
	}
	for _, info := range f.all {
		if info.Problem != "" {
			continue // Verify reports unreadable metadata
		}
		for _, p := range metaProblems(info) {
			report(displayName(info), "meta: "+p)
		}
	}
	bar = o.env.progressBar("verify", total, false)
	defer bar.Finish()
	err = inspect.Verify(ctx, f.db, resolver, func(p inspect.Problem) {
		name := names[p.Resource]
		if name == "" {
			name = p.Resource
		}
		if p.Kind == inspect.ProblemNotDecoded && sealed[p.Resource] {
			// Not a problem of the file: its payloads are encrypted.
			fmt.Fprintf(o.env.Stderr, "%s: sealed: objects not decoded (give --key-file to check them); keys, index entries and envelopes checked\n", name)
			return
		}
		if _, ok := keyed[p.Resource]; ok && p.Kind == inspect.ProblemItem && strings.Contains(p.Detail, seal.ErrUnknownKey.Error()) {
			undecrypted[p.Resource]++
			return
		}
		report(name, problemText(p))
	})
	bar.Finish()
	if err != nil {
		return err
	}
	var undecryptable []string
	for _, info := range f.all {
		id := info.Identity.String()
		if n := undecrypted[id]; n > 0 {
			undecryptable = append(undecryptable, keyed[id].describe(fmt.Sprintf("%s of %s", plural(n, "object"), displayName(info))))
		}
	}
	var keyErr error
	if len(undecryptable) > 0 {
		keyErr = withHint(mark(ErrKey, "%s; their keys, index entries and envelopes were checked", strings.Join(undecryptable, "; ")), keysHint)
	}
	objects := decoded.Load()
	if problems > 0 {
		if keyErr != nil {
			printError(o.env.Stderr, keyErr, "")
		}
		fmt.Fprintf(o.env.Stdout, "%s: %s (%s, %s decoded)\n", o.File, plural(problems, "problem"), f.checkedResources(), plural(int(objects), "object"))
		return mark(ErrProblems, "verify found %s in %s", plural(problems, "problem"), o.File)
	}
	fmt.Fprintf(o.env.Stdout, "%s: no problems (%s, %s decoded)\n", o.File, f.checkedResources(), plural(int(objects), "object"))
	return keyErr
}

// checkedResources counts the resources verify checked as info counts
// them, and the factory's sample resources (bolt.Identity.IsSample), which
// info leaves out, apart: "2 resources, 1 factory sample".
func (f *snapshotFile) checkedResources() string {
	out := plural(len(f.resources), "resource")
	if samples := len(f.all) - len(f.resources); samples > 0 {
		out += ", " + plural(samples, "factory sample")
	}
	return out
}

// metaProblems checks what the recorded metadata of one resource says
// about itself; Verify checks it against the data.
func metaProblems(info inspect.ResourceInfo) []string {
	var out []string
	if info.Schema != inspect.SchemaVersion {
		out = append(out, fmt.Sprintf("schema version %d, this snapshot reads %d: the resource's data cannot be checked reliably", info.Schema, inspect.SchemaVersion))
	}
	switch info.State {
	case inspect.StateNew, inspect.StateComplete, inspect.StateIncomplete, inspect.StateRelisting, inspect.StateFilling:
	default:
		out = append(out, fmt.Sprintf("unknown state %q", info.State))
	}
	if !slices.IsSorted(info.Indexes) || len(slices.Compact(slices.Clone(info.Indexes))) != len(info.Indexes) {
		out = append(out, fmt.Sprintf("index names %q are not sorted and distinct", info.Indexes))
	}
	if info.Objects < 0 {
		out = append(out, fmt.Sprintf("negative object count %d", info.Objects))
	}
	return out
}

// problemText is a Problem without its resource.
func problemText(p inspect.Problem) string {
	s := string(p.Kind)
	if p.Key != "" {
		s += fmt.Sprintf(" key %q", p.Key)
	}
	if p.Index != "" {
		s += fmt.Sprintf(" index %q value %q", p.Index, p.Value)
	}
	return s + ": " + p.Detail
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
