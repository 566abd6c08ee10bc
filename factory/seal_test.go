package factory

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/memory"
	"github.com/warmcache/warmcache/store/seal"
)

var (
	secretsGVR    = corev1.SchemeGroupVersion.WithResource("secrets")
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
	// secretBytes is the data of every test Secret and ConfigMap: it must
	// never appear in a cache file, a backup or a copy moved aside.
	secretBytes = []byte("tOp-S3cret-p4ssw0rd-that-must-not-reach-the-disk")
)

func testKey(t *testing.T) seal.Key {
	t.Helper()
	b := make([]byte, seal.KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	k, err := seal.ParseKey(base64.StdEncoding.EncodeToString(b))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// secretSource returns a fake source with n Secrets and one ConfigMap,
// each holding secretBytes in its data and in kubectl's last-applied
// annotation, and a pod.
func secretSource(t *testing.T, n int) *fakesource.Source {
	t.Helper()
	src := newSource(t, "p")
	ann := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(secretBytes)}
	for i := range n {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s" + string(rune('a'+i)), Labels: map[string]string{"app": "db"}, Annotations: ann},
			Data:       map[string][]byte{"password": secretBytes},
		}
		if _, err := src.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"token": string(secretBytes)}}
	if _, err := src.Add(cm); err != nil {
		t.Fatal(err)
	}
	return src
}

// serveSecrets serves the pods, Secrets and ConfigMaps of src over HTTP.
func serveSecrets(t *testing.T, src *fakesource.Source) *httptest.Server {
	t.Helper()
	h, err := fakeapi.NewHandler(fakeapi.Options{Source: src, Resources: []fakeapi.Resource{
		fakeapi.Pods,
		{GroupVersionResource: secretsGVR, Kind: "Secret", Namespaced: true},
		{GroupVersionResource: configMapsGVR, Kind: "ConfigMap", Namespaced: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// secretsAPI serves n Secrets and a ConfigMap (secretSource,
// serveSecrets) until the test ends, and returns their source, the
// server's URL and a context that ends after a minute.
func secretsAPI(t *testing.T, n int) (*fakesource.Source, string, context.Context) {
	t.Helper()
	src := secretSource(t, n)
	srv := serveSecrets(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return src, srv.URL, ctx
}

// sealFactory returns a factory on path with keys (nil: none) and
// sensitive resources, and its log.
func sealFactory(t *testing.T, path, host string, keys seal.KeyProvider, sensitive ...schema.GroupResource) (*Factory, func() string) {
	t.Helper()
	return loggedFactory(t, Options{Path: path, RESTConfig: &rest.Config{Host: host}, ClusterID: "test", Keys: keys, Sensitive: sensitive})
}

// assertNoSecretBytes fails if secretBytes, or its base64 form, is in the
// file at path.
func assertNoSecretBytes(t *testing.T, what, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, needle := range [][]byte{secretBytes, []byte(base64.StdEncoding.EncodeToString(secretBytes))} {
		if i := bytes.Index(b, needle); i >= 0 {
			t.Fatalf("%s (%s) holds the secret's bytes in clear at offset %d", what, path, i)
		}
	}
}

// assertSecretData fails unless inf serves Secret ns/name with its data.
func assertSecretData(t *testing.T, inf *informer.Informer, key string) {
	t.Helper()
	obj, ok, err := inf.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		t.Fatalf("GetByKey(%s): %v, %v", key, ok, err)
	}
	if s := obj.(*corev1.Secret); !bytes.Equal(s.Data["password"], secretBytes) {
		t.Fatalf("secret %s served with data %q", key, s.Data["password"])
	}
}

// TestSecretsAreSealed checks that a Secret's data and annotations never
// reach the file, its backup or a copy moved aside in clear, that the
// sealed file warm-starts, and that ConfigMaps follow Options.Sensitive.
func TestSecretsAreSealed(t *testing.T) {
	_, host, ctx := secretsAPI(t, 3)
	dir := t.TempDir()
	path := filepath.Join(dir, "f.db")
	keys := seal.Static(testKey(t))

	for _, start := range []string{"cold", "warm"} {
		t.Run(start, func(t *testing.T) {
			f, logs := sealFactory(t, path, host, keys, schema.GroupResource{Resource: "configmaps"})
			secrets, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{})
			if err != nil {
				t.Fatal(err)
			}
			meta, err := f.ForMetadata(ctx, secretsGVR, "Secret", Scope{})
			if err != nil {
				t.Fatal(err)
			}
			cms, err := f.ForResource(ctx, configMapsGVR, "ConfigMap", Scope{})
			if err != nil {
				t.Fatal(err)
			}
			pods, err := f.ForResource(ctx, podsGVR, "Pod", Scope{})
			if err != nil {
				t.Fatal(err)
			}
			if start == "warm" {
				if n := len(secrets.GetIndexer().ListKeys()); n != 3 {
					t.Fatalf("warm start: %d secrets before start, want 3; log:\n%s", n, logs())
				}
			}
			syncAll(ctx, t, f)
			assertSecretData(t, secrets, "ns/sb")
			if n := len(meta.GetIndexer().ListKeys()); n != 3 {
				t.Fatalf("metadata informer holds %d secrets", n)
			}
			if n := len(cms.GetIndexer().ListKeys()) + len(pods.GetIndexer().ListKeys()); n != 2 {
				t.Fatalf("configmaps and pods: %d objects, want 2", n)
			}
			var backup bytes.Buffer
			if _, err := f.DB().Backup(ctx, &backup); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "backup.db"), backup.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := inspect.Resources(ctx, f.DB())
			if err != nil {
				t.Fatal(err)
			}
			sealed := 0
			for _, r := range withoutSamples(res) {
				if _, ok := seal.InnerName(r.Codec); ok {
					sealed++
				}
			}
			if sealed != 3 {
				t.Fatalf("%d sealed resources, want 3 (secrets typed and metadata, configmaps): %+v", sealed, res)
			}
			// Each resource's sample object is stored as the resource is.
			codecOf := map[string]string{}
			for _, r := range res {
				codecOf[r.Identity.Resource+" "+r.Identity.Kind] = r.Codec
			}
			samples := 0
			for _, r := range res {
				if !IsSample(r.Identity) {
					continue
				}
				samples++
				of := strings.TrimSuffix(r.Identity.Resource, SampleResourceSuffix) + " " + strings.TrimSuffix(r.Identity.Kind, SampleKindSuffix)
				if r.Codec != codecOf[of] {
					t.Errorf("the sample of %s is stored with codec %q, the resource with %q", of, r.Codec, codecOf[of])
				}
			}
			if samples != 4 {
				t.Errorf("%d sample resources, want one per resource (4)", samples)
			}
			if err := f.Shutdown(); err != nil {
				t.Fatal(err)
			}
			assertNoSecretBytes(t, "the cache file", path)
			assertNoSecretBytes(t, "a backup", filepath.Join(dir, "backup.db"))
			if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte("ns/sb")) {
				t.Fatalf("the file does not hold the secrets' keys: the check above proves nothing")
			}
		})
	}

	// A damaged file is moved aside: the copy holds only sealed data.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Both meta pages: the first two pages, of the size the first records
	// after its 16-byte page header (magic, version, page size).
	pageSize := int(binary.LittleEndian.Uint32(b[24:28]))
	clear(b[:2*pageSize])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, logs := sealFactory(t, path, host, keys)
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	var moved []string
	all, _ := filepath.Glob(path + ".corrupt-*")
	for _, m := range all {
		if !strings.HasSuffix(m, ".state") {
			moved = append(moved, m)
		}
	}
	if len(moved) != 1 {
		t.Fatalf("moved aside: %v; log:\n%s", moved, logs())
	}
	assertNoSecretBytes(t, "the copy moved aside", moved[0])
}

// TestSecretsWithoutKeysStayInMemory checks that without keys a Secret
// informer keeps its objects in memory, with a log line, and writes
// nothing of them to the file.
func TestSecretsWithoutKeysStayInMemory(t *testing.T) {
	_, host, ctx := secretsAPI(t, 2)
	path := filepath.Join(t.TempDir(), "f.db")
	f, logs := sealFactory(t, path, host, nil)
	secrets, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := f.ForResource(ctx, configMapsGVR, "ConfigMap", Scope{}, WithSealing())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ForResource(ctx, podsGVR, "Pod", Scope{}); err != nil {
		t.Fatal(err)
	}
	for _, inf := range []*informer.Informer{secrets, cms} {
		if _, ok := inf.Store().(*memory.Store); !ok {
			t.Fatalf("a sensitive informer without keys has a %T, want a memory store", inf.GetIndexer())
		}
	}
	if !strings.Contains(logs(), "Not persisting a sensitive resource without an encryption key") {
		t.Fatalf("no log line says why:\n%s", logs())
	}
	syncAll(ctx, t, f)
	assertSecretData(t, secrets, "ns/sa")
	res, err := inspect.Resources(ctx, f.DB())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Identity.Resource != "pods" && r.Identity.Resource != "pods"+SampleResourceSuffix {
			t.Fatalf("the file records %s (%d objects, codec %q), want nothing of a resource kept in memory", r.Identity, r.Objects, r.Codec)
		}
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	assertNoSecretBytes(t, "the cache file", path)
}

// TestSealingOptOut checks WithUnsafePlaintext: the opt-out stores a
// Secret in clear, turning sealing on later discards that data, and so
// does a start without keys (the Secrets then kept in memory).
func TestSealingOptOut(t *testing.T) {
	_, host, ctx := secretsAPI(t, 1)
	path := filepath.Join(t.TempDir(), "f.db")
	f, _ := sealFactory(t, path, host, nil)
	secrets, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{}, WithUnsafePlaintext())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := secrets.Store().(*bolt.Store); !ok {
		t.Fatalf("WithUnsafePlaintext: %T, want the file", secrets.Store())
	}
	syncAll(ctx, t, f)
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Contains(b, secretBytes) {
		t.Fatalf("WithUnsafePlaintext did not store the data in clear: the grep of the other tests proves nothing")
	}

	f, logs := sealFactory(t, path, host, seal.Static(testKey(t)))
	defer func() { _ = f.Shutdown() }()
	secrets, err = f.ForResource(ctx, secretsGVR, "Secret", Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(secrets.GetIndexer().ListKeys()); n != 0 || !strings.Contains(logs(), `codec \"protobuf\" recorded, want \"sealed-aes256gcm+protobuf\"`) {
		t.Fatalf("plaintext data opened sealed: %d objects kept, log:\n%s", n, logs())
	}
	syncAll(ctx, t, f)
	assertSecretData(t, secrets, "ns/sa")
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// Plaintext again, then a start without keys: the plaintext data is
	// deleted from the file, not left behind.
	f, _ = sealFactory(t, path, host, nil)
	if _, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{}, WithUnsafePlaintext()); err != nil {
		t.Fatal(err)
	}
	syncAll(ctx, t, f)
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	f, logs = sealFactory(t, path, host, nil)
	if _, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{}); err != nil {
		t.Fatal(err)
	}
	res, err := inspect.Resources(ctx, f.DB())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Identity.Resource == "secrets" {
			t.Errorf("without keys the file keeps the Secrets' resource (%d objects, codec %q)", r.Objects, r.Codec)
		}
	}
	if !strings.Contains(logs(), "Deleted the stored data of a sensitive resource kept in memory") || !strings.Contains(logs(), `codec="protobuf"`) {
		t.Errorf("no log line says the plaintext data was deleted:\n%s", logs())
	}
}

// TestWrongMissingAndRotatedKeys walks a file through the key changes an
// operator makes: a key file that cannot be read (the Secrets are kept in
// memory and the sealed data waits in the file), a wrong key (the data is
// discarded and relisted, never served), a rotation (new writes and a
// relist use the new key while the old one still reads) and the removal
// of the old key once nothing uses it (a warm start).
func TestWrongMissingAndRotatedKeys(t *testing.T) {
	src, host, ctx := secretsAPI(t, 3)
	dir := t.TempDir()
	path := filepath.Join(dir, "f.db")
	a, b := testKey(t), testKey(t)
	secretsID := bolt.Identity{Version: "v1", Resource: "secrets", Kind: "Secret"}

	steps := []struct {
		name     string
		keys     seal.KeyProvider
		memory   bool   // kept in memory only
		before   int    // objects served before the first sync
		log      string // a line the step must log
		keysSeen map[string]int64
		relists  bool // lists more than the resume check
	}{
		{name: "first start", keys: seal.Static(a), keysSeen: map[string]int64{a.ID(): 3}, relists: true},
		{name: "key file missing", keys: seal.FromFile(filepath.Join(dir, "no-such-key")), memory: true,
			log: "Cannot read the encryption keys", keysSeen: map[string]int64{a.ID(): 3}, relists: true},
		{name: "same key again", keys: seal.Static(a), before: 3, keysSeen: map[string]int64{a.ID(): 3}},
		{name: "rotation", keys: seal.Static(b, a), before: 3, log: "sealed with an older key", keysSeen: map[string]int64{b.ID(): 3}, relists: true},
		{name: "old key removed", keys: seal.Static(b), before: 3, keysSeen: map[string]int64{b.ID(): 3}},
		{name: "wrong key", keys: seal.Static(a), log: "cannot be opened with the configured keys", keysSeen: map[string]int64{a.ID(): 3}, relists: true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			f, logs := sealFactory(t, path, host, step.keys)
			defer func() {
				if err := f.Shutdown(); err != nil {
					t.Error(err)
				}
			}()
			secrets, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := secrets.Store().(*memory.Store); ok != step.memory {
				t.Fatalf("store %T, want in memory: %v", secrets.Store(), step.memory)
			}
			if n := len(secrets.GetIndexer().ListKeys()); n != step.before && !step.memory {
				t.Fatalf("%d objects before start, want %d; log:\n%s", n, step.before, logs())
			}
			before := src.Stats()
			checks := len(src.Requests())
			syncAll(ctx, t, f)
			assertSecretData(t, secrets, "ns/sc")
			after := src.Stats()
			lists := after.Lists + after.WatchLists - before.Lists - before.WatchLists
			relisted := after.WatchLists > before.WatchLists
			for _, r := range src.Requests()[checks:] {
				// The resume check is a consistent LIST (RV ""), of one
				// object or of a page for a small store; a relist lists
				// at "0" or not older than the stored RV.
				if r.Verb == "list" && r.Options.ResourceVersion != "" {
					relisted = true
				}
			}
			if lists == 0 || relisted != step.relists {
				t.Fatalf("%d lists, relisted %v, want a relist: %v", lists, relisted, step.relists)
			}
			if step.log != "" && !strings.Contains(logs(), step.log) {
				t.Fatalf("the log lacks %q:\n%s", step.log, logs())
			}
			got, err := inspect.SealKeys(ctx, f.DB(), secretsID)
			if err != nil {
				t.Fatal(err)
			}
			if !mapsEqual(got, step.keysSeen) {
				t.Fatalf("objects per key %v, want %v", got, step.keysSeen)
			}
		})
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// keyFunc is a seal.KeyProvider of a function, for providers that break
// their contract.
type keyFunc func(context.Context) ([]seal.Key, error)

func (f keyFunc) Keys(ctx context.Context) ([]seal.Key, error) { return f(ctx) }

// TestUnusableKeysLeaveNoPlaintext checks that a factory whose Keys give
// no usable key (the key file missing, empty or malformed, the variable
// unset, a provider that fails or returns no valid key) keeps Secrets in
// memory and deletes the plaintext Secrets an earlier start stored with
// WithUnsafePlaintext: the file's data no longer holds their bytes, as a
// compacted copy of it (the log line's advice) shows. The pages they
// occupied are freed, not overwritten, until bbolt reuses them (see the
// README on switching sealing on).
func TestUnusableKeysLeaveNoPlaintext(t *testing.T) {
	_, host, ctx := secretsAPI(t, 2)
	dir := t.TempDir()
	empty, malformed := filepath.Join(dir, "empty-keys"), filepath.Join(dir, "malformed-keys")
	if err := os.WriteFile(empty, []byte("# no key yet\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(malformed, []byte("not base64!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		keys seal.KeyProvider
	}{
		{"key file missing", seal.FromFile(filepath.Join(dir, "no-such-file"))},
		{"key file empty", seal.FromFile(empty)},
		{"key file malformed", seal.FromFile(malformed)},
		{"variable unset", seal.FromEnv("WARMCACHE_TEST_KEYS_NEVER_SET")},
		{"provider error", keyFunc(func(context.Context) ([]seal.Key, error) { return nil, errors.New("key service unavailable") })},
		{"no key, no error", keyFunc(func(context.Context) ([]seal.Key, error) { return nil, nil })},
		{"zero key", keyFunc(func(context.Context) ([]seal.Key, error) { return []seal.Key{{}}, nil })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.db")
			f, _ := sealFactory(t, path, host, nil)
			if _, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{}, WithUnsafePlaintext()); err != nil {
				t.Fatal(err)
			}
			syncAll(ctx, t, f)
			if err := f.Shutdown(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); !bytes.Contains(b, secretBytes) {
				t.Fatalf("WithUnsafePlaintext did not store the data in clear: the grep below proves nothing")
			}

			f, logs := sealFactory(t, path, host, tc.keys)
			defer func() { _ = f.Shutdown() }()
			secrets, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := secrets.Store().(*memory.Store); !ok {
				t.Fatalf("store %T, want in memory", secrets.Store())
			}
			if !strings.Contains(logs(), "Cannot read the encryption keys") || !strings.Contains(logs(), "Deleted the stored data of a sensitive resource kept in memory") ||
				!strings.Contains(logs(), "factory.Options.Keys is set but gave no usable key") {
				t.Fatalf("the log does not say why the keys are unusable and the plaintext deleted:\n%s", logs())
			}
			res, err := inspect.Resources(ctx, f.DB())
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 0 {
				t.Fatalf("the file still records %+v", res)
			}
			syncAll(ctx, t, f)
			assertSecretData(t, secrets, "ns/sb")
			compacted := filepath.Join(t.TempDir(), "compacted.db")
			if _, err := inspect.CompactTo(ctx, f.DB(), compacted); err != nil {
				t.Fatal(err)
			}
			if err := f.Shutdown(); err != nil {
				t.Fatal(err)
			}
			assertNoSecretBytes(t, "the cache file's data (compacted)", compacted)
		})
	}
}

// TestSensitiveNotCreatedWhenPlaintextStays checks that the informer of a
// sensitive resource kept in memory is not created when what the file
// holds of it cannot be deleted (a read-only file): the plaintext stays,
// and the caller is told.
func TestSensitiveNotCreatedWhenPlaintextStays(t *testing.T) {
	_, host, ctx := secretsAPI(t, 1)
	path := filepath.Join(t.TempDir(), "f.db")
	f, _ := sealFactory(t, path, host, nil)
	if _, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{}, WithUnsafePlaintext()); err != nil {
		t.Fatal(err)
	}
	syncAll(ctx, t, f)
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	f, err := New(ctx, Options{Path: path, Bolt: bolt.Options{ReadOnly: true}, RESTConfig: &rest.Config{Host: host}, ClusterID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Shutdown() }()
	if _, err := f.ForResource(ctx, secretsGVR, "Secret", Scope{}); !errors.Is(err, ErrResource) || !errors.Is(err, bolt.ErrReadOnly) {
		t.Fatalf("ForResource of Secrets kept in memory over a read-only file holding them in plaintext = %v, want ErrResource and bolt.ErrReadOnly", err)
	}
}

// An unstructured informer of Secrets used to record no kind (ForDynamic's
// example had none): that record, in plaintext, is deleted when the
// Secrets' unstructured informer opens under its current identity, kept
// in memory or sealed alike.
func TestKindlessUnstructuredSecretsRecordDeleted(t *testing.T) {
	_, host, ctx := secretsAPI(t, 2)
	for _, keys := range []seal.KeyProvider{nil, seal.Static(testKey(t))} {
		path := filepath.Join(t.TempDir(), "f.db")
		f, _ := sealFactory(t, path, host, nil)
		// What ForDynamic of a built-in did before it named the kind.
		if _, err := f.InformerFor(ctx, secretsGVR, &unstructured.Unstructured{}, DynamicListWatch(f.opts.Dynamic, secretsGVR, Scope{}), Scope{}, nil, WithUnsafePlaintext()); err != nil {
			t.Fatal(err)
		}
		syncAll(ctx, t, f)
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); !bytes.Contains(b, secretBytes) {
			t.Fatalf("the kindless record was not written in clear: the grep below proves nothing")
		}

		f, _ = sealFactory(t, path, host, keys)
		secrets, err := f.ForDynamic(ctx, secretsGVR, Scope{})
		if err != nil {
			t.Fatal(err)
		}
		syncAll(ctx, t, f)
		if n := len(secrets.GetStore().List()); n != 2 {
			t.Fatalf("keys %v: the unstructured informer holds %d Secrets, want 2", keys != nil, n)
		}
		res, err := inspect.Resources(ctx, f.DB())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Identity.Kind == "" {
				t.Fatalf("keys %v: the file still records the kindless %s", keys != nil, r.Identity)
			}
		}
		compacted := filepath.Join(t.TempDir(), "compacted.db")
		if _, err := inspect.CompactTo(ctx, f.DB(), compacted); err != nil {
			t.Fatal(err)
		}
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
		assertNoSecretBytes(t, "the cache file's data (compacted)", compacted)
	}
}

// TestDefaultSensitiveCannotBeTurnedOff: what DefaultSensitive returns is
// the caller's; changing it leaves Secrets sensitive.
func TestDefaultSensitiveCannotBeTurnedOff(t *testing.T) {
	d := DefaultSensitive()
	if !slices.Contains(d, secretsGVR.GroupResource()) {
		t.Fatalf("DefaultSensitive() = %v, want core Secrets in it", d)
	}
	for i := range d {
		d[i] = schema.GroupResource{Resource: "pods"}
	}
	f := &Factory{}
	if !f.sensitive(secretsGVR.GroupResource(), sealDefault) {
		t.Fatal("Secrets are not sensitive once DefaultSensitive's result was changed")
	}
}
