package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Exit codes of the snapshot CLI that the soak tells apart (see
// `snapshot --help`).
const (
	snapshotExitCorrupt  = 5
	snapshotExitProblems = 6
)

// snapshotCLI runs the snapshot CLI on the cache file while the
// controller is down: what it reads is what an operator would see.
type snapshotCLI struct {
	path string
}

// run runs the CLI and returns its standard output, standard error and
// exit code; err is set only when it could not run.
func (s snapshotCLI) run(ctx context.Context, args ...string) (stdout, stderr []byte, code int, err error) {
	cmd := exec.CommandContext(ctx, s.path, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.Bytes(), errOut.Bytes(), exit.ExitCode(), nil
	}
	if err != nil {
		return nil, nil, -1, fmt.Errorf("soak: snapshot %s: %w", strings.Join(args, " "), err)
	}
	return out.Bytes(), errOut.Bytes(), 0, nil
}

// verify runs `snapshot verify FILE` and returns the problems it
// reports, "" for none.
func (s snapshotCLI) verify(ctx context.Context, file string) (string, error) {
	out, errOut, code, err := s.run(ctx, "verify", file)
	switch {
	case err != nil:
		return "", err
	case code == 0:
		return "", nil
	case code == snapshotExitProblems || code == snapshotExitCorrupt:
		return fmt.Sprintf("exit %d: %s%s", code, clip(out, 2048), clip(errOut, 2048)), nil
	default:
		return "", fmt.Errorf("soak: snapshot verify %s: exit %d: %s", file, code, clip(errOut, 2048))
	}
}

// fileResource is a resource as `snapshot info -o json` describes it.
type fileResource struct {
	Name            string `json:"name"`
	Group           string `json:"group"`
	Resource        string `json:"resource"`
	Objects         int64  `json:"objects"`
	ResourceVersion string `json:"resourceVersion"`
	State           string `json:"state"`
	Complete        bool   `json:"complete"`
	Reason          string `json:"reason"`
	Problem         string `json:"problem"`
}

// info runs `snapshot info FILE -o json`.
func (s snapshotCLI) info(ctx context.Context, file string) ([]fileResource, error) {
	out, errOut, code, err := s.run(ctx, "info", file, "-o", "json")
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("soak: snapshot info %s: exit %d: %s", file, code, clip(errOut, 2048))
	}
	var info struct {
		Resources []fileResource `json:"resources"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("soak: snapshot info %s: %w", file, err)
	}
	return info.Resources, nil
}

// list runs `snapshot list FILE RESOURCE -A -o json` (managed fields
// shown) and returns the objects by namespace/name.
func (s snapshotCLI) list(ctx context.Context, file, resource string) (map[string]map[string]interface{}, error) {
	out, errOut, code, err := s.run(ctx, "list", file, resource, "-A", "-o", "json", "--show-managed-fields")
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("soak: snapshot list %s %s: exit %d: %s", file, resource, code, clip(errOut, 2048))
	}
	var l struct {
		Items []map[string]interface{} `json:"items"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		return nil, fmt.Errorf("soak: snapshot list %s %s: %w", file, resource, err)
	}
	objs := make(map[string]map[string]interface{}, len(l.Items))
	for _, o := range l.Items {
		objs[objectKey(o)] = o
	}
	return objs, nil
}

// listVersions runs `snapshot list FILE RESOURCE -A` with custom
// columns and returns the objects' resourceVersions by namespace/name.
func (s snapshotCLI) listVersions(ctx context.Context, file, resource string) (map[string]int64, error) {
	out, errOut, code, err := s.run(ctx, "list", file, resource, "-A", "--no-headers",
		"-o", "custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,RV:.metadata.resourceVersion")
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("soak: snapshot list %s %s: exit %d: %s", file, resource, code, clip(errOut, 2048))
	}
	objs := map[string]int64{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("soak: snapshot list %s %s: line %q", file, resource, line)
		}
		rv, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("soak: snapshot list %s %s: line %q: %w", file, resource, line, err)
		}
		objs[f[0]+"/"+f[1]] = rv
	}
	return objs, nil
}

// objectKey returns an object's namespace/name.
func objectKey(o map[string]interface{}) string {
	m, _ := o["metadata"].(map[string]interface{})
	ns, _ := m["namespace"].(string)
	name, _ := m["name"].(string)
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// objectRV returns an object's resourceVersion as a number, -1 if it
// has none.
func objectRV(o map[string]interface{}) int64 {
	m, _ := o["metadata"].(map[string]interface{})
	s, _ := m["resourceVersion"].(string)
	rv, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return rv
}

// clip returns b as a string of at most n bytes.
func clip(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + " ..."
	}
	return s
}
