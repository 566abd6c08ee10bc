package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/internal/podgen"
)

// TestVerifyFindsOverwrittenPayload is the case of a byte damaged on disk
// inside a stored object, which bbolt reads as valid: 8 bytes of one pod's
// containerID overwritten in the file (as dd conv=notrunc would). verify
// names the pod, get refuses to print it and list leaves it out with a
// warning; none prints the mangled containerID.
func TestVerifyFindsOverwrittenPayload(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	pod := podgen.Pod(1)
	key := pod.Namespace + "/" + pod.Name
	cid := pod.Status.ContainerStatuses[0].ContainerID
	mangled := cid[:20] + "deadbeef" + cid[28:]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte(cid)); n == 0 {
		t.Fatalf("containerID %q not found in the file", cid)
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(data, []byte(cid), []byte(mangled)), 0o600); err != nil {
		t.Fatal(err)
	}
	unchanged(t, path)

	r := run(t, "verify", path)
	want := `pods: checksum key "` + key + `": envelope (payload, resourceVersion, UID): checksum mismatch`
	if r.code != ExitProblems || !strings.Contains(r.stdout, want) {
		t.Errorf("verify: exit %d, stdout:\n%s\nwant exit %d and %q", r.code, r.stdout, ExitProblems, want)
	}

	r = run(t, "get", path, "pods", pod.Name, "-n", pod.Namespace, "-o", "yaml")
	if r.code == ExitOK || strings.Contains(r.stdout, "deadbeef") || !strings.Contains(r.stderr, "checksum mismatch") {
		t.Errorf("get: exit %d, stdout %q, stderr %q; want a checksum error and no object", r.code, r.stdout, r.stderr)
	}
	r = run(t, "list", path, "pods", "-A", "-o", "yaml")
	if strings.Contains(r.stdout, "deadbeef") || !strings.Contains(r.stderr, key) {
		t.Errorf("list: exit %d, stderr %q; want the damaged pod left out and named", r.code, r.stderr)
	}
}
