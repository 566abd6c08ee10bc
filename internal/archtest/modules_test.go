package archtest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	gomodule "golang.org/x/mod/module"
)

// repoDir is the root of the repository, where the root module's go.mod
// is.
const repoDir = "../.."

// goModule is one go.mod of the repository.
type goModule struct {
	dir  string // relative to the repository root, "." for the root module
	file *modfile.File
}

// modules returns every module of the repository: each go.mod outside
// testdata.
func modules(t *testing.T) []goModule {
	t.Helper()
	var out []goModule
	err := filepath.WalkDir(repoDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == ".git" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(p, b, nil)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repoDir, filepath.Dir(p))
		if err != nil {
			return err
		}
		out = append(out, goModule{dir: filepath.ToSlash(rel), file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ours reports whether path is the root module or one nested in it.
func ours(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// Every module of the repository can be fetched by a user as it is
// published: none requires one of ours at v0.0.0 (which no user can
// resolve) or replaces a module with a local path (replace directives of
// a dependency are ignored, and go install pkg@version refuses a module
// that has any), and each requirement of one of ours is a version of this
// repository. Local development reaches this checkout through the go.work
// beside each nested module, which must use and replace exactly the
// versions its go.mod requires (see RELEASING.md). Nothing here fetches a
// module.
func TestPublishedModules(t *testing.T) {
	mods := modules(t)
	if len(mods) < 2 {
		t.Fatalf("found %d modules; the repository has the root module and nested ones", len(mods))
	}
	dirOf := map[string]string{} // module path -> directory
	for _, m := range mods {
		if m.file.Module == nil {
			t.Fatalf("%s/go.mod has no module directive", m.dir)
		}
		dirOf[m.file.Module.Mod.Path] = m.dir
	}
	if dirOf[module] != "." {
		t.Fatalf("the root go.mod is not module %s", module)
	}
	for _, m := range mods {
		name := path.Join(m.dir, "go.mod")
		if want := path.Join(module, m.dir); m.file.Module.Mod.Path != want {
			t.Errorf("%s: module %s, want %s (its path in the repository)", name, m.file.Module.Mod.Path, want)
		}
		for _, r := range m.file.Replace {
			if r.New.Version == "" {
				t.Errorf("%s: replaces %s with the local path %s: no user can resolve it (use the go.work beside it)", name, r.Old.Path, r.New.Path)
			} else if m.dir == "." {
				t.Errorf("%s: replaces %s: go install ...@version refuses a module with replace directives", name, r.Old.Path)
			}
		}
		if m.dir == "." && len(m.file.Exclude) > 0 {
			t.Errorf("%s: exclude directives: go install ...@version refuses a module with them", name)
		}
		var work *modfile.WorkFile
		for _, r := range m.file.Require {
			if !ours(r.Mod.Path) {
				continue
			}
			dir, ok := dirOf[r.Mod.Path]
			if !ok {
				t.Errorf("%s: requires %s, which is not a module of this repository", name, r.Mod.Path)
				continue
			}
			if err := checkVersion(r.Mod); err != nil {
				t.Errorf("%s: requires %s %s: %v", name, r.Mod.Path, r.Mod.Version, err)
				continue
			}
			if err := checkCommit(r.Mod, dir); err != nil {
				t.Errorf("%s: requires %s %s: %v", name, r.Mod.Path, r.Mod.Version, err)
			}
			if work == nil {
				work = readWork(t, m.dir)
			}
			if work != nil {
				if err := checkWork(work, m.dir, dir, r.Mod); err != nil {
					t.Errorf("%s/go.work: %v", m.dir, err)
				}
			}
		}
	}
}

// checkVersion rejects v0.0.0 and any version that is not a valid
// semantic or pseudo-version of mod's path.
func checkVersion(mod gomodule.Version) error {
	if mod.Version == "v0.0.0" {
		return errors.New("v0.0.0 resolves only through a replace directive, which a user's build ignores: require a version of this repository (a tag, or the pseudo-version of a commit on main; RELEASING.md)")
	}
	if err := gomodule.Check(mod.Path, mod.Version); err != nil {
		return err
	}
	return nil
}

// checkCommit checks a pseudo-version against the local git history: its
// revision is a commit that holds dir/go.mod, and its timestamp is the
// commit's time, as the Go command derives it. Without git, or in a
// shallow clone that lacks the commit, it checks nothing.
func checkCommit(mod gomodule.Version, dir string) error {
	if !gomodule.IsPseudoVersion(mod.Version) {
		return nil
	}
	rev, err := gomodule.PseudoVersionRev(mod.Version)
	if err != nil {
		return err
	}
	when, err := gomodule.PseudoVersionTime(mod.Version)
	if err != nil {
		return err
	}
	out, err := git("log", "-1", "--format=%H %ct", rev+"^{commit}")
	if err != nil {
		return nil // no git, or a shallow clone: nothing to check against
	}
	f := strings.Fields(out)
	if len(f) != 2 || !strings.HasPrefix(f[0], rev) {
		return nil // the abbreviation is ambiguous or names something else
	}
	sec, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return fmt.Errorf("git log: commit time %q: %w", f[1], err)
	}
	const stamp = "20060102150405"
	if got := time.Unix(sec, 0).UTC(); !got.Equal(when) {
		return fmt.Errorf("the pseudo-version's time %s is not its commit's (%s UTC): write v0.0.0-%s-%s", when.Format(stamp), got.Format(stamp), got.Format(stamp), f[0][:12])
	}
	modPath := path.Join(dir, "go.mod")
	if _, err := git("cat-file", "-e", f[0]+":"+modPath); err != nil {
		return fmt.Errorf("commit %s has no %s", f[0][:12], modPath)
	}
	return nil
}

// git runs git in the repository and returns its trimmed output.
func git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = repoDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.New(strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// readWork parses the go.work beside the module in dir; a missing one is
// an error of the test (nil is returned).
func readWork(t *testing.T, dir string) *modfile.WorkFile {
	t.Helper()
	p := filepath.Join(repoDir, dir, "go.work")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("%s/go.mod requires modules of this repository but %s/go.work, which builds it against this checkout, cannot be read: %v", dir, dir, err)
		return nil
	}
	w, err := modfile.ParseWork(p, b, nil)
	if err != nil {
		t.Errorf("%v", err)
		return nil
	}
	return w
}

// checkWork checks that work (the go.work of the module in modDir) uses
// the module in reqDir and replaces the version req of it with that
// directory: the Go command still reads the go.mod of a required version
// of a workspace module, which must not be fetched.
func checkWork(work *modfile.WorkFile, modDir, reqDir string, req gomodule.Version) error {
	rel, err := filepath.Rel(filepath.FromSlash(modDir), filepath.FromSlash(reqDir))
	if err != nil {
		return err
	}
	same := func(p string) bool { return filepath.Clean(filepath.FromSlash(p)) == rel }
	used := false
	for _, u := range work.Use {
		used = used || same(u.Path)
	}
	if !used {
		return fmt.Errorf("does not use %s (%s)", rel, req.Path)
	}
	for _, r := range work.Replace {
		if r.Old.Path == req.Path && r.Old.Version == req.Version && r.New.Version == "" && same(r.New.Path) {
			return nil
		}
	}
	return fmt.Errorf("does not replace %s %s (the version go.mod requires) with %s", req.Path, req.Version, rel)
}
