package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// writeKeyFile writes a key file holding the keys of the given materials,
// one byte repeated each, and returns its path.
func writeKeyFile(t *testing.T, dir, name string, materials ...byte) string {
	t.Helper()
	var b strings.Builder
	for _, m := range materials {
		b.WriteString(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{m}, seal.KeySize)) + "\n")
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rotatedFixture writes, beside path, a file whose Secrets are sealed
// with two keys, as during a key rotation: prod/db-a with key 0x5a, and
// prod/db-b rewritten since with the new key 0x6b. It returns the file.
func rotatedFixture(t *testing.T, dir string) string {
	t.Helper()
	keyOf := func(m byte) seal.Key {
		k, err := seal.NewKey(bytes.Repeat([]byte{m}, seal.KeySize))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	old, cur := keyOf(0x5a), keyOf(0x6b)
	secret := func(name, rv string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, ResourceVersion: rv, UID: "u", Labels: map[string]string{"app": "db"},
				CreationTimestamp: metav1.NewTime(testNow.Add(-90 * 60e9))},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"password": cliSecretValue},
		}
	}
	path := filepath.Join(dir, "rotated.db")
	ctx := context.Background()
	db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	ix := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	c, err := seal.NewCodec(codec.Protobuf(nil), []seal.Key{old})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, db, secretsID, c, ix, []interface{}{secret("db-a", "7"), secret("db-b", "7")}, "9", 10)
	// The controller restarted with the new key first: its writes seal
	// with it.
	c, err = seal.NewCodec(codec.Protobuf(nil), []seal.Key{cur, old})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Resource(ctx, bolt.ResourceOptions{Identity: secretsID, Codec: c, Indexers: ix})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(secret("db-b", "10")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConventionsGolden pins the kubectl conventions an operator meets:
// get prints a table by default, a missing object is kubectl's NotFound,
// a missing or wrong key is a key error (exit code 8) and not damage, the
// names of sealed objects show without a key, and index prints only keys
// whose object exists.
func TestConventionsGolden(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	dir := filepath.Dir(path)
	sealed, keyFile, _ := sealedFixture(t, 3, "7")
	sealedDir := filepath.Dir(sealed)
	badKeys := writeKeyFile(t, sealedDir, "badkeys", 0x01)
	rotated := rotatedFixture(t, sealedDir)
	// Pod 1 deleted behind the indexes (verify's index-without-item): of
	// 60 pods, ns-001 holds pods 1 and 51; of 6, pod 1 alone.
	dangling := filepath.Join(dir, "dangling.db")
	danglingSmall := filepath.Join(dir, "dangling-small.db")
	for p, n := range map[string]int{dangling: 60, danglingSmall: 6} {
		writeFixture(t, p, fixtureOptions{pods: n, podsOnly: true})
		mutate(t, p, func(tx *bbolt.Tx) error {
			return liveGeneration(t, tx, podsID).Bucket([]byte("items")).Delete([]byte("ns-001/app-1-00000001-x7k2p"))
		})
	}
	for _, p := range []string{path, sealed, rotated, dangling, danglingSmall} {
		unchanged(t, p)
	}
	tests := []struct {
		name string
		dir  string
		args []string
	}{
		{"get-default-table", dir, []string{"get", path, "pods", "app-1-00000001-x7k2p", "-n", "ns-001"}},
		{"get-default-table-several", dir, []string{"get", path, "deploy", "web-1", "web-2", "-n", "ns-001"}},
		{"get-not-found", dir, []string{"get", path, "pods", "nope", "-n", "ns-001"}},
		{"get-not-found-cluster-scoped", dir, []string{"get", path, "nodes", "node-0009"}},
		{"get-sealed-no-key", sealedDir, []string{"get", sealed, "secrets", "db-a", "-n", "prod"}},
		{"get-sealed-bad-key", sealedDir, []string{"--key-file", badKeys, "get", sealed, "secrets", "db-a", "-n", "prod", "-o", "yaml"}},
		{"get-sealed-name-no-key", sealedDir, []string{"get", sealed, "secrets", "db-a", "db-z", "-n", "prod", "-o", "name"}},
		{"list-sealed-no-key", sealedDir, []string{"list", sealed, "secrets", "-A"}},
		{"list-sealed-bad-key", sealedDir, []string{"--key-file", badKeys, "list", sealed, "secrets", "-A"}},
		{"list-sealed-name-no-key", sealedDir, []string{"list", sealed, "secrets", "-A", "-o", "name"}},
		{"list-sealed-name-selected", sealedDir, []string{"list", sealed, "secrets", "-n", "prod", "-l", "app=db", "--field-selector", "metadata.name!=db-b", "-o", "name"}},
		{"list-sealed-name-bad-key", sealedDir, []string{"--key-file", badKeys, "list", sealed, "secrets", "-A", "-o", "name"}},
		{"list-sealed-rotation", sealedDir, []string{"--key-file", keyFile, "list", rotated, "secrets", "-A"}},
		{"export-sealed-bad-key", sealedDir, []string{"--key-file", badKeys, "export", sealed, "secrets"}},
		{"verify-sealed-bad-key", sealedDir, []string{"--key-file", badKeys, "verify", sealed}},
		{"verify-sealed-no-key", sealedDir, []string{"verify", sealed}},
		{"verify-sealed-rotation", sealedDir, []string{"--key-file", keyFile, "verify", rotated}},
		{"index-sealed-no-key", sealedDir, []string{"index", sealed, "secrets", "namespace", "prod"}},
		{"index-dangling-value", dir, []string{"index", dangling, "pods", "namespace", "ns-001"}},
		{"index-dangling-values", dir, []string{"index", danglingSmall, "pods", "nodeName"}},
		{"index-dangling-only", dir, []string{"index", danglingSmall, "pods", "namespace", "ns-001"}},
		{"index-dangling-counts", dir, []string{"index", dangling, "pods", "namespace", "--counts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.args...)
			if strings.Contains(r.stdout, "password") || strings.Contains(r.stdout, base64.StdEncoding.EncodeToString(cliSecretValue)) {
				if !slices.Contains(tt.args, keyFile) {
					t.Errorf("a secret's data printed without its key:\n%s", r.stdout)
				}
			}
			golden.Check(t, "conventions-"+tt.name, transcript(tt.dir, tt.args, r))
		})
	}
}

// TestNoControllerBehaviourClaimed checks that what the CLI prints about
// damage says what it found, never what a controller does about it (the
// CLI changes nothing): no "relisted", "marked incomplete", "moves it
// aside", "next start" or "next open", whatever the damage.
func TestNoControllerBehaviourClaimed(t *testing.T) {
	damaged, _ := damagedFile(t)
	sealed, _, _ := sealedFixture(t, 2, "7")
	badKeys := writeKeyFile(t, t.TempDir(), "badkeys", 0x01)
	garbage := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("garbage!"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	var runs [][]string
	for _, args := range [][]string{
		{"list", damaged, "pods", "-A", "-o", "name"},
		{"list", damaged, "pods", "-A", "-o", "yaml"},
		{"get", damaged, "pods", "app-1-00000001-x7k2p", "-n", "ns-001"},
		{"export", damaged, "pods"},
		{"verify", damaged},
		{"--key-file", badKeys, "get", sealed, "secrets", "db-a", "-n", "prod"},
		{"--key-file", badKeys, "list", sealed, "secrets", "-A"},
		{"--key-file", badKeys, "verify", sealed},
		{"info", garbage},
		{"list", garbage, "pods"},
	} {
		runs = append(runs, args)
	}
	for _, args := range runs {
		r := run(t, args...)
		if r.code == ExitOK {
			t.Errorf("%q: exit 0 on a damaged file or with a wrong key", args)
		}
		out := strings.ToLower(r.stdout + r.stderr)
		for _, claim := range []string{"relisted", "marked incomplete", "moves it aside", "moved aside", "next start", "next open", "will be relisted"} {
			if strings.Contains(out, claim) {
				t.Errorf("%q says %q:\n%s%s", args, claim, r.stdout, r.stderr)
			}
		}
		if slices.Contains(args, badKeys) && (r.code != ExitKey || strings.Contains(out, "corrupt") || strings.Contains(out, "damaged")) {
			t.Errorf("%q: exit %d, want %d without a word of damage:\n%s", args, r.code, ExitKey, r.stderr)
		}
	}
}
