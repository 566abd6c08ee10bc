package cli

import (
	"slices"
	"strings"

	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// target is one resource named on a command line with the object names
// asked for in it (none: every object).
type target struct {
	info  inspect.ResourceInfo
	names []string
}

// parseTargets resolves the resource arguments of get and list as kubectl
// get takes them: TYPE[,TYPE...] [NAME...], or TYPE/NAME... (each argument
// a resource and a name, as `-o name` prints them). Targets keep the order
// of the command line; a resource named twice is one target. ns, when
// given, picks among several scopes of one resource (see resolveResource).
func parseTargets(path string, infos []inspect.ResourceInfo, args []string, ns string) ([]target, error) {
	var out []target
	add := func(arg string, names ...string) error {
		info, err := resolveResourceIn(path, infos, arg, ns)
		if err != nil {
			return err
		}
		id := info.Identity.String()
		i := slices.IndexFunc(out, func(t target) bool { return t.info.Identity.String() == id })
		if i < 0 {
			out = append(out, target{info: info})
			i = len(out) - 1
		}
		for _, n := range names {
			if !slices.Contains(out[i].names, n) {
				out[i].names = append(out[i].names, n)
			}
		}
		return nil
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "/") }) {
		for _, a := range args {
			typ, name, ok := strings.Cut(a, "/")
			if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
				return nil, withHint(usageErrorf("argument %q is not TYPE/NAME: give every object as TYPE/NAME, or TYPE followed by names", a),
					"e.g. 'snapshot get %s pod/web-0 deployment.apps/web' or 'snapshot get %s pods web-0 web-1'.", shellQuote(path), shellQuote(path))
			}
			if err := add(typ, name); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for _, typ := range strings.Split(args[0], ",") {
		if typ == "" {
			return nil, usageErrorf("empty resource type in %q", args[0])
		}
		if err := add(typ, args[1:]...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// shellQuote quotes s for a POSIX shell when it needs quoting, so that a
// hint can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
