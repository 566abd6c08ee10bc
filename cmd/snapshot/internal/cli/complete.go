package cli

import (
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/cache"
)

// completionLockTimeout bounds the wait for a file's lock while completing:
// a shell must never hang on a locked file.
const completionLockTimeout = 200 * time.Millisecond

// withFile opens path quietly for completion and returns what fn finds, or
// nothing when the file cannot be opened.
func withFile(cmd *cobra.Command, common *commonOptions, path string, fn func(f *snapshotFile) []string) []string {
	quiet := (&Env{Stdout: io.Discard, Stderr: io.Discard}).withDefaults()
	f, err := openSnapshot(cmd.Context(), &quiet, path, openOptions{Timeout: min(common.LockTimeout, completionLockTimeout)})
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	return fn(f)
}

// withPrefix keeps the candidates that start with prefix, sorted and
// distinct.
func withPrefix(candidates []string, prefix string) []string {
	var out []string
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// completeFiles completes the first n arguments as file names.
func completeFiles(n int) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) < n {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// resourceNames lists the resources of a file as commands accept them,
// and for a resource recorded under several scopes the ID of each.
func resourceNames(f *snapshotFile) []string {
	var out []string
	scopes := map[string]int{}
	for _, info := range f.resources {
		if info.Problem == "" {
			out = append(out, displayName(info))
			scopes[displayName(info)]++
		}
	}
	for _, info := range f.resources {
		if info.Problem == "" && scopes[displayName(info)] > 1 {
			out = append(out, info.Identity.String())
		}
	}
	return out
}

// completeFileResource completes FILE RESOURCE.
func completeFileResource(_ *Env, common *commonOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return nil, cobra.ShellCompDirectiveDefault
		case 1:
			return withPrefix(withFile(cmd, common, args[0], resourceNames), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeFileResourceName completes FILE RESOURCE NAME, the names of the
// namespace -n gives (or the default one).
func completeFileResourceName(env *Env, common *commonOptions) cobra.CompletionFunc {
	resource := completeFileResource(env, common)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) < 2 {
			return resource(cmd, args, toComplete)
		}
		ns, _ := cmd.Flags().GetString("namespace")
		names := withFile(cmd, common, args[0], func(f *snapshotFile) []string {
			info, err := resolveResource(f.path, f.resources, args[1])
			if err != nil {
				return nil
			}
			st, err := f.store(cmd.Context(), info, false)
			if err != nil {
				return nil
			}
			if ns == "" {
				ns = info.Identity.Namespace
			}
			if ns == "" {
				ns = "default"
			}
			var out []string
			for _, key := range st.ListKeys() {
				if n, ok := strings.CutPrefix(key, ns+"/"); ok {
					out = append(out, n)
				} else if !strings.Contains(key, "/") {
					out = append(out, key) // cluster-scoped
				}
			}
			return out
		})
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeIndexArgs completes FILE RESOURCE INDEX VALUE.
func completeIndexArgs(env *Env, common *commonOptions) cobra.CompletionFunc {
	resource := completeFileResource(env, common)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) < 2 || len(args) > 3 {
			return resource(cmd, args, toComplete)
		}
		found := withFile(cmd, common, args[0], func(f *snapshotFile) []string {
			info, err := resolveResource(f.path, f.resources, args[1])
			if err != nil {
				return nil
			}
			if len(args) == 2 {
				return info.Indexes
			}
			if !slices.Contains(info.Indexes, args[2]) {
				return nil
			}
			st, err := f.store(cmd.Context(), info, false)
			if err != nil {
				return nil
			}
			return st.ListIndexFuncValues(args[2])
		})
		return withPrefix(found, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeDiffArgs completes FILE1 FILE2 RESOURCE.
func completeDiffArgs(_ *Env, common *commonOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0, 1:
			return nil, cobra.ShellCompDirectiveDefault
		case 2:
			return withPrefix(withFile(cmd, common, args[0], resourceNames), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerCompletions completes -o with formats and, where the command has
// it, -n with the namespaces of the file given as first argument.
func registerCompletions(cmd *cobra.Command, _ *Env, common *commonOptions, formats []string) {
	candidates := make([]string, len(formats))
	for i, f := range formats {
		candidates[i] = strings.TrimSuffix(f, "...") // jsonpath=... completes to jsonpath=
	}
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(candidates, cobra.ShellCompDirectiveNoFileComp))
	if cmd.Flags().Lookup("namespace") == nil {
		return
	}
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		found := withFile(cmd, common, args[0], func(f *snapshotFile) []string {
			var out []string
			for _, info := range f.resources {
				if info.Problem != "" || (len(args) > 1 && !matchesArg(f, info.Identity.String(), args[1])) {
					continue
				}
				st, err := f.store(cmd.Context(), info, false)
				if err != nil {
					continue
				}
				if slices.Contains(info.Indexes, cache.NamespaceIndex) {
					out = append(out, st.ListIndexFuncValues(cache.NamespaceIndex)...)
					continue
				}
				for _, key := range st.ListKeys() {
					if ns, _, ok := strings.Cut(key, "/"); ok {
						out = append(out, ns)
					}
				}
			}
			return out
		})
		return withPrefix(found, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// matchesArg reports whether the resource argument arg resolves to the
// resource with identity string id in f.
func matchesArg(f *snapshotFile, id, arg string) bool {
	info, err := resolveResource(f.path, f.resources, arg)
	return err == nil && info.Identity.String() == id
}
