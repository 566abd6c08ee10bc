package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/jsondoc"
	"github.com/warmcache/warmcache/store/bolt"
)

func TestLockedFileGivesExitCodeAndAdvice(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	unchanged(t, path)
	// A running controller: a read-write DB holds the exclusive lock.
	db, err := bolt.Open(context.Background(), path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	out := filepath.Join(t.TempDir(), "out.db")
	for _, args := range [][]string{
		{"info", path},
		{"list", path, "pods", "-A"},
		{"get", path, "pods", "x"},
		{"index", path, "pods", "namespace"},
		{"verify", path},
		{"export", path, "pods"},
		{"diff", path, path},
		{"compact", path, "--output", out},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := run(t, append(args, "--lock-timeout", "50ms")...)
			if r.code != ExitLocked {
				t.Errorf("exit %d, want %d (locked); stderr: %s", r.code, ExitLocked, r.stderr)
			}
			for _, want := range []string{"is locked by a running process", "snapshot backup URL --output"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not mention %q:\n%s", want, r.stderr)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout: %q", r.stdout)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("compact of a locked file created its output: %v", err)
	}
	// --lock-timeout 0 tries once.
	if r := run(t, "info", path, "--lock-timeout", "0"); r.code != ExitLocked {
		t.Errorf("--lock-timeout 0: exit %d, want %d (locked)", r.code, ExitLocked)
	}
}

func TestVerifyFindsProblems(t *testing.T) {
	victim := []byte("ns-001/app-1-00000001-x7k2p")
	tests := []struct {
		name   string
		damage func(t *testing.T, tx *bbolt.Tx) error
		want   []string
	}{
		{"item deleted behind the indexes", func(t *testing.T, tx *bbolt.Tx) error {
			return liveGeneration(t, tx, podsID).Bucket([]byte("items")).Delete(victim)
		}, []string{
			`pods: index-without-item key "ns-001/app-1-00000001-x7k2p" index "namespace" value "ns-001"`,
			"pods: blob-without-item: envelope ",
			"pods: count: meta records 6 objects, 5 items stored",
		}},
		{"index entry deleted", func(t *testing.T, tx *bbolt.Tx) error {
			return liveGeneration(t, tx, podsID).Bucket([]byte("index")).Bucket([]byte("nodeName")).Delete(append([]byte("node-0001\x00"), victim...))
		}, []string{`pods: reverse-without-index key "ns-001/app-1-00000001-x7k2p" index "nodeName" value "node-0001"`}},
		{"index entry added", func(t *testing.T, tx *bbolt.Tx) error {
			k := append([]byte("node-9999\x00"), victim...)
			return liveGeneration(t, tx, podsID).Bucket([]byte("index")).Bucket([]byte("nodeName")).Put(k, indexEntryValue("nodeName", k))
		}, []string{`pods: index-without-reverse key "ns-001/app-1-00000001-x7k2p" index "nodeName" value "node-9999"`}},
		{"payload garbage", func(t *testing.T, tx *bbolt.Tx) error {
			return setEnvelope(t, tx, podsID, string(victim), []byte("\x94\xa11\xa1u\xc4\x03abc"))
		}, []string{`pods: item key "ns-001/app-1-00000001-x7k2p": payload does not decode`}},
		{"envelope garbage", func(t *testing.T, tx *bbolt.Tx) error {
			return setEnvelope(t, tx, deployID, "ns-000/web-0", []byte("junk"))
		}, []string{`deployments.apps: item key "ns-000/web-0": malformed item envelope`}},
		{"count wrong", func(t *testing.T, tx *bbolt.Tx) error {
			return editMeta(t, tx, nodesID, map[string]interface{}{"objects": 7})
		}, []string{"nodes: count: meta records 7 objects, 2 items stored"}},
		{"unknown state", func(t *testing.T, tx *bbolt.Tx) error {
			return editMeta(t, tx, widgetsID, map[string]interface{}{"state": "weird"})
		}, []string{`widgets.example.com: meta: unknown state "weird"`}},
		{"meta unreadable", func(t *testing.T, tx *bbolt.Tx) error {
			return tx.Bucket([]byte(widgetsID.String())).Put([]byte("meta"), []byte{0xc1})
		}, []string{"res;g=example.com;v=v1alpha1;r=widgets;k=Widget;ns=;l=;f=;s=: meta: decode resource meta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fixture(t, fixtureOptions{})
			mutate(t, path, func(tx *bbolt.Tx) error { return tt.damage(t, tx) })
			unchanged(t, path)
			r := run(t, "verify", path)
			if r.code != ExitProblems {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, ExitProblems, r.stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout does not report %q:\n%s", want, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, "error: verify found") {
				t.Errorf("stderr: %q", r.stderr)
			}
		})
	}
}

func TestExportIsApplyReady(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	unchanged(t, path)
	r := run(t, "export", path, "pods")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var list struct {
		APIVersion string                      `json:"apiVersion"`
		Kind       string                      `json:"kind"`
		Items      []unstructured.Unstructured `json:"items"`
	}
	if err := yaml.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || len(list.Items) != 6 {
		t.Fatalf("%s with %d items, want a List of 6", list.Kind, len(list.Items))
	}
	for _, item := range list.Items {
		if item.GetAPIVersion() != "v1" || item.GetKind() != "Pod" {
			t.Errorf("%s: apiVersion %q kind %q", item.GetName(), item.GetAPIVersion(), item.GetKind())
		}
		md := item.Object["metadata"].(map[string]interface{})
		for _, f := range serverSetMetadata {
			if _, ok := md[f]; ok {
				t.Errorf("%s: metadata.%s not removed", item.GetName(), f)
			}
		}
		if item.GetName() == "" || item.GetNamespace() == "" || len(item.GetLabels()) == 0 {
			t.Errorf("%s: name, namespace or labels lost", item.GetName())
		}
		if _, ok := item.Object["status"]; !ok {
			t.Errorf("%s: status removed without --no-status", item.GetName())
		}
	}
}

func TestStripServerFields(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"metadata", `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","uid":"u","resourceVersion":"1","generation":2,"managedFields":[],"creationTimestamp":"2026-01-01T00:00:00Z","ownerReferences":[{"uid":"x"}],"labels":{"a":"b"}},"data":{"k":"v"}}`,
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"a":"b"}},"data":{"k":"v"}}`},
		{"last applied annotation alone", `{"kind":"ConfigMap","metadata":{"name":"a","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}}}`,
			`{"kind":"ConfigMap","metadata":{"name":"a"}}`},
		{"other annotations kept", `{"kind":"ConfigMap","metadata":{"name":"a","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","keep":"me"}}}`,
			`{"kind":"ConfigMap","metadata":{"name":"a","annotations":{"keep":"me"}}}`},
		{"service cluster IP", `{"kind":"Service","apiVersion":"v1","metadata":{"name":"s"},"spec":{"clusterIP":"10.0.0.1","clusterIPs":["10.0.0.1"],"ports":[{"port":80}]}}`,
			`{"kind":"Service","apiVersion":"v1","metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`},
		{"headless service", `{"kind":"Service","apiVersion":"v1","metadata":{"name":"s"},"spec":{"clusterIP":"None","clusterIPs":["None"]}}`,
			`{"kind":"Service","apiVersion":"v1","metadata":{"name":"s"},"spec":{"clusterIP":"None","clusterIPs":["None"]}}`},
		{"service of another group", `{"kind":"Service","apiVersion":"example.com/v1","metadata":{"name":"s"},"spec":{"clusterIP":"x"}}`,
			`{"kind":"Service","apiVersion":"example.com/v1","metadata":{"name":"s"},"spec":{"clusterIP":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in, want jsondoc.Doc
			if err := in.Parse([]byte(tt.in)); err != nil {
				t.Fatal(err)
			}
			if err := want.Parse([]byte(tt.want)); err != nil {
				t.Fatal(err)
			}
			stripServerFields(&in)
			if got, want := in.AppendJSON(nil, in.Root(), ""), want.AppendJSON(nil, want.Root(), ""); !bytes.Equal(got, want) {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

func TestDiffExitCode(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	writeFixture(t, a, fixtureOptions{})
	writeFixture(t, b, fixtureOptions{podsOnly: true, mutatePods: func(p *corev1.Pod) {
		if p.Name == "app-3-00000003-x7k2p" {
			p.ResourceVersion = "33"
		}
	}})
	unchanged(t, a)
	unchanged(t, b)
	tests := []struct {
		args     []string
		wantCode int
		want     []string
	}{
		{[]string{"diff", a, b, "--exit-code"}, ExitDifferent, []string{
			"~ ns-003/app-3-00000003-x7k2p (rv 4 -> 33)",
			"deployments.apps (only in " + a + ", rv 202): 0 added, 3 removed",
			"- ns-000/web-0 (rv 200)",
		}},
		{[]string{"diff", b, a, "deploy"}, ExitOK, []string{"deployments.apps (only in " + a + ", rv 202): 3 added", "+ ns-001/web-2 (rv 202)"}},
		{[]string{"diff", a, a, "--exit-code"}, ExitOK, []string{"pods (rv 6 -> 6): 0 added, 0 removed, 0 changed, 6 unchanged"}},
		{[]string{"diff", a, b, "foos"}, ExitNotFound, nil},
	}
	for _, tt := range tests {
		r := run(t, tt.args...)
		if r.code != tt.wantCode {
			t.Errorf("%q: exit %d, want %d; stderr %s", tt.args, r.code, tt.wantCode, r.stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%q: stdout lacks %q:\n%s", tt.args, w, r.stdout)
			}
		}
		if tt.wantCode == ExitDifferent && r.stderr != "" {
			t.Errorf("%q: differences are not errors, stderr %q", tt.args, r.stderr)
		}
	}
}

// TestProgressOnTerminalOnly checks that a progress bar is drawn on a
// terminal, erased at the end, and leaves stdout unchanged.
func TestProgressOnTerminalOnly(t *testing.T) {
	path := fixture(t, fixtureOptions{pods: 20, podsOnly: true})
	for _, args := range [][]string{{"list", path, "pods", "-A", "-o", "json"}, {"export", path, "pods"}, {"verify", path}} {
		t.Run(args[0], func(t *testing.T) {
			quiet := run(t, args...)
			tty := runEnv(t, Env{Terminal: func(io.Writer) bool { return true }}, args...)
			if quiet.code != ExitOK || tty.code != ExitOK {
				t.Fatalf("exit %d / %d: %s %s", quiet.code, tty.code, quiet.stderr, tty.stderr)
			}
			if quiet.stderr != "" {
				t.Errorf("progress written to a stderr that is not a terminal: %q", quiet.stderr)
			}
			if tty.stdout != quiet.stdout {
				t.Error("the progress bar changed stdout")
			}
			if !strings.Contains(tty.stderr, "\r"+args[0]) || !strings.HasSuffix(tty.stderr, "\r\x1b[K") {
				t.Errorf("no progress bar drawn and erased on the terminal: %q", tty.stderr)
			}
		})
	}
}

// TestCommandsLeaveFileUnchanged runs every command that reads a file
// once more in a row and compares the file's bytes and times.
func TestCommandsLeaveFileUnchanged(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	unchanged(t, path)
	out := filepath.Join(t.TempDir(), "c.db")
	for _, args := range [][]string{
		{"info", path}, {"list", path, "pods", "-A"}, {"get", path, "pods", "app-0-00000000-x7k2p", "-n", "ns-000"},
		{"index", path, "pods", "namespace"}, {"verify", path}, {"export", path, "pods"}, {"diff", path, path, "--show"},
		{"compact", path, "--output", out}, {"__complete", "list", path, ""},
	} {
		if r := run(t, args...); r.code != ExitOK {
			t.Errorf("%q: exit %d: %s", args, r.code, r.stderr)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the file changed")
	}
}

func TestInfoStates(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  []string
	}{
		{"complete", func(*testing.T, string) {}, []string{"State:             complete\n", `"relistInterrupted": false`}},
		{"incomplete", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bbolt.Tx) error {
				return editMeta(t, tx, podsID, map[string]interface{}{"state": "incomplete", "reason": "get: 1 object could not be decoded"})
			})
		}, []string{"State:             incomplete: get: 1 object could not be decoded\n", `"complete": false`}},
		{"relist interrupted", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bbolt.Tx) error {
				return editMeta(t, tx, podsID, map[string]interface{}{"staging": 9})
			})
		}, []string{"State:             complete; a relist was interrupted", `"relistInterrupted": true`, `"state": "relisting"`}},
		{"filling", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bbolt.Tx) error {
				return editMeta(t, tx, podsID, map[string]interface{}{"state": "filling", "rv": ""})
			})
		}, []string{"State:             filling (a first list", `"relistInterrupted": true`, `"state": "filling"`}},
		{"never listed", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bbolt.Tx) error {
				return editMeta(t, tx, podsID, map[string]interface{}{"state": "new", "rv": ""})
			})
		}, []string{"State:             new (never completely listed)\n", "Resource version:  <none>\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fixture(t, fixtureOptions{podsOnly: true})
			tt.setup(t, path)
			unchanged(t, path)
			text, js := run(t, "info", path), run(t, "info", path, "-o", "json")
			if text.code != ExitOK || js.code != ExitOK {
				t.Fatalf("exit %d / %d: %s %s", text.code, js.code, text.stderr, js.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(text.stdout+js.stdout, w) {
					t.Errorf("info does not say %q:\n%s\n%s", w, text.stdout, js.stdout)
				}
			}
		})
	}
}

// TestVerifyFillingFile: a file left by a first list that did not commit
// (written in place, state filling) verifies clean: its partial content
// is consistent, and the next start discards it.
func TestVerifyFillingFile(t *testing.T) {
	path := fixture(t, fixtureOptions{podsOnly: true})
	mutate(t, path, func(tx *bbolt.Tx) error {
		return editMeta(t, tx, podsID, map[string]interface{}{"state": "filling", "rv": ""})
	})
	unchanged(t, path)
	if r := run(t, "verify", path); r.code != ExitOK {
		t.Errorf("verify of a filling file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestNegativeLockTimeout(t *testing.T) {
	path := fixture(t, fixtureOptions{podsOnly: true})
	if r := run(t, "info", path, "--lock-timeout", "-1s"); r.code != ExitUsage || !strings.Contains(r.stderr, "--lock-timeout must not be negative") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}
