package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

var (
	secretsID      = bolt.Identity{Version: "v1", Resource: "secrets", Kind: "Secret"}
	cliSecretValue = []byte("cli-s3cret-value-never-printed-without-a-key")
)

// sealedFixture writes a file whose Secrets are sealed with a key written
// to a key file; it returns the file, the key file and the key's ID.
func sealedFixture(t *testing.T, objects int, objRV string) (path, keyFile, keyID string) {
	t.Helper()
	dir := t.TempDir()
	material := bytes.Repeat([]byte{0x5a}, seal.KeySize)
	keyFile = filepath.Join(dir, "keys")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(material)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := seal.NewKey(material)
	if err != nil {
		t.Fatal(err)
	}
	c, err := seal.NewCodec(codec.Protobuf(nil), []seal.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "cache.db")
	db, err := bolt.Open(context.Background(), path, bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	var objs []interface{}
	for i := range objects {
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "db-" + string(rune('a'+i)), ResourceVersion: objRV, UID: "u",
				Labels: map[string]string{"app": "db"}},
			Data: map[string][]byte{"password": cliSecretValue},
		})
	}
	fill(t, db, secretsID, c, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, objs, "9", 10)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path, keyFile, key.ID()
}

// TestSealedWithoutKey: without --key-file, info shows a sealed resource's
// counts, key IDs and resourceVersion, and the commands that print objects
// refuse with a hint, never printing ciphertext as data.
func TestSealedWithoutKey(t *testing.T) {
	path, _, keyID := sealedFixture(t, 2, "7")
	defer unchanged(t, path)
	changed, _, _ := sealedFixture(t, 2, "8")

	r := run(t, "info", path)
	if r.code != ExitOK {
		t.Fatalf("info: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"Objects:           2", "Resource version:  9", "Sealed:", keyID + ": 2", "not readable without --key-file"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("info lacks %q:\n%s", want, r.stdout)
		}
	}
	// verify checks all but the payloads, and says so.
	if r := run(t, "verify", path); r.code != ExitOK || !strings.Contains(r.stderr, "give --key-file to check them") {
		t.Errorf("verify without a key: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The object keys show through the namespace index every factory
	// informer has.
	if r := run(t, "index", path, "secrets", "namespace", "prod"); r.code != ExitOK || r.stdout != "prod/db-a\nprod/db-b\n" {
		t.Errorf("index without a key: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// diff compares keys and resourceVersions without a key; it needs
	// one only to show what changed.
	if r := run(t, "diff", path, path, "secrets"); r.code != ExitOK || !strings.Contains(r.stdout, "2 unchanged") {
		t.Errorf("diff of equal sealed files: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "info", path, "-o", "json")
	if !strings.Contains(r.stdout, `"id": "`+keyID+`"`) || !strings.Contains(r.stdout, `"readable": false`) {
		t.Errorf("info -o json lacks the key:\n%s", r.stdout)
	}

	for _, args := range [][]string{
		{"get", path, "secret", "db-a", "-n", "prod", "-o", "yaml"},
		{"list", path, "secrets", "-A", "-o", "json"},
		{"export", path, "secrets"},
		{"diff", path, changed, "secrets", "--show"},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := run(t, args...)
			if r.code != ExitKey || strings.Contains(r.stdout, "password") || (args[0] != "diff" && r.stdout != "") {
				t.Fatalf("%v: exit %d, stdout %q; want exit %d and no object printed", args, r.code, r.stdout, ExitKey)
			}
			if !strings.Contains(r.stderr, "--key-file") {
				t.Errorf("%v: the error does not say how to read them:\n%s", args, r.stderr)
			}
		})
	}
}

// TestSealedWithKey: --key-file decrypts for every command.
func TestSealedWithKey(t *testing.T) {
	path, keyFile, _ := sealedFixture(t, 2, "7")
	defer unchanged(t, path)
	encoded := base64.StdEncoding.EncodeToString(cliSecretValue)

	r := run(t, "--key-file", keyFile, "get", path, "secret", "db-a", "-n", "prod", "-o", "yaml")
	if r.code != ExitOK || !strings.Contains(r.stdout, "password: "+encoded) {
		t.Fatalf("get with --key-file: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "--key-file", keyFile, "export", path, "secrets")
	if r.code != ExitOK || strings.Count(r.stdout, encoded) != 2 {
		t.Fatalf("export with --key-file: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	changed, _, _ := sealedFixture(t, 2, "8")
	r = run(t, "--key-file", keyFile, "diff", path, changed, "secrets")
	if r.code != ExitOK || !strings.Contains(r.stdout, "2 changed") {
		t.Fatalf("diff with --key-file: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "--key-file", keyFile, "verify", path)
	if r.code != ExitOK {
		t.Fatalf("verify with --key-file: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "--key-file", keyFile, "info", path)
	if !strings.Contains(r.stdout, "(readable with --key-file)") {
		t.Fatalf("info with --key-file:\n%s", r.stdout)
	}

	// A wrong key is a clear error per object, never garbage.
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, "--key-file", other, "get", path, "secret", "db-a", "-n", "prod", "-o", "yaml")
	if r.code != ExitKey || strings.Contains(r.stdout, "password") || !strings.Contains(r.stderr, "is not in --key-file") {
		t.Fatalf("get with a wrong key: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A key file that is not one.
	if err := os.WriteFile(other, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r = run(t, "--key-file", other, "info", path); r.code != ExitUsage || strings.Contains(r.stderr, "not a key") {
		t.Fatalf("a bad key file: exit %d\n%s", r.code, r.stderr)
	}
}

// TestSealedPayloadMoved: a sealed envelope copied onto another object (an
// attacker with write access to the file, or a corruption) does not
// decode there: get fails as for a damaged object and verify reports it;
// the other object's data is never served under the wrong name.
func TestSealedPayloadMoved(t *testing.T) {
	path, keyFile, _ := sealedFixture(t, 2, "7")
	mutate(t, path, func(tx *bbolt.Tx) error {
		gen := liveGeneration(t, tx, secretsID)
		entry := gen.Bucket([]byte("items")).Get([]byte("prod/db-a"))
		env := gen.Bucket([]byte("blobs")).Get(entry[:8])
		// Without its checksum: setEnvelope writes a valid one for its new
		// key, as one who moves it on purpose would; the seal must catch it.
		body := bytes.Clone(env[:len(env)-5])
		return setEnvelope(t, tx, secretsID, "prod/db-b", body)
	})
	r := run(t, "--key-file", keyFile, "get", path, "secret", "db-b", "-n", "prod", "-o", "yaml")
	if r.code != ExitCorrupt || strings.Contains(r.stdout, "db-a") || strings.Contains(r.stdout, "password") {
		t.Fatalf("get of a moved payload: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "--key-file", keyFile, "verify", path)
	if r.code != ExitProblems || !strings.Contains(r.stdout, "prod/db-b") || !strings.Contains(r.stdout, "does not authenticate") {
		t.Fatalf("verify of a moved payload: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
