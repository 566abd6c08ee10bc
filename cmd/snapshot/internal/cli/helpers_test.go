package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	bbolt "go.etcd.io/bbolt"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// testNow is the clock of every test run: three days after podgen's first
// creationTimestamp.
var testNow = time.Date(2026, 1, 5, 3, 4, 5, 0, time.UTC)

// Identities of the fixture's resources.
var (
	podsID    = bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"}
	deployID  = bolt.Identity{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment"}
	widgetsID = bolt.Identity{Group: "example.com", Version: "v1alpha1", Resource: "widgets", Kind: "Widget"}
	nodesID   = bolt.Identity{Version: "v1", Resource: "nodes", Kind: "Node"}
)

// nodeNameIndex files pods under spec.nodeName.
func nodeNameIndex(obj interface{}) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{p.Spec.NodeName}, nil
}

// fixtureOptions shapes a fixture file.
type fixtureOptions struct {
	// pods is the number of podgen pods (default 6).
	pods int
	// podsOnly leaves out the other resources.
	podsOnly bool
	// podIndexes overrides the pods' indexers.
	podIndexes cache.Indexers
	// mutatePods changes the pods before they are stored.
	mutatePods func(p *corev1.Pod)
	// skipPods leaves out the pods of these podgen indexes.
	skipPods map[int]bool
}

// writeFixture writes a deterministic cache file at path, as a controller
// would: pods (podgen, indexed by namespace and node), deployments.apps,
// widgets.example.com (a custom resource, unstructured) and nodes
// (cluster-scoped).
func writeFixture(t testing.TB, path string, o fixtureOptions) {
	t.Helper()
	if o.pods == 0 {
		o.pods = 6
	}
	if o.podIndexes == nil {
		o.podIndexes = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "nodeName": nodeNameIndex}
	}
	ctx := context.Background()
	db, err := bolt.Open(ctx, path, bolt.Options{Logger: klog.Background(), Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	const page = 500
	var objs []interface{}
	for i := range o.pods {
		if o.skipPods[i] {
			continue
		}
		p := podgen.Pod(i)
		p.TypeMeta = metav1.TypeMeta{} // as client-go's informers store them
		if o.mutatePods != nil {
			o.mutatePods(p)
		}
		objs = append(objs, p)
	}
	fill(t, db, podsID, codec.Protobuf(nil), o.podIndexes, objs, fmt.Sprint(o.pods), page)
	if o.podsOnly {
		return
	}
	var deploys []interface{}
	for i, ns := range []string{"ns-000", "ns-001", "ns-001"} {
		replicas := int32(i + 1)
		deploys = append(deploys, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i), ResourceVersion: fmt.Sprint(200 + i),
				UID: "d-uid", CreationTimestamp: metav1.NewTime(testNow.Add(-time.Duration(i+1) * 36 * time.Hour)),
				Labels: map[string]string{"app": "web", "tier": []string{"frontend", "backend", "frontend"}[i]}},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas},
		})
	}
	fill(t, db, deployID, codec.Protobuf(nil), cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, deploys, "202", page)
	var widgets []interface{}
	for i := range 2 {
		widgets = append(widgets, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1alpha1", "kind": "Widget",
			"metadata": map[string]interface{}{"namespace": "lab", "name": fmt.Sprintf("gizmo-%d", i), "resourceVersion": fmt.Sprint(300 + i),
				"uid": fmt.Sprintf("w-uid-%d", i), "creationTimestamp": testNow.Add(-time.Duration(i+1) * time.Minute).Format(time.RFC3339)},
			"spec": map[string]interface{}{"size": int64(i + 1)},
		}})
	}
	fill(t, db, widgetsID, codec.Unstructured(), nil, widgets, "301", page)
	var nodes []interface{}
	for i := range 2 {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i), ResourceVersion: fmt.Sprint(400 + i),
			CreationTimestamp: metav1.NewTime(testNow.Add(-30 * 24 * time.Hour))}})
	}
	fill(t, db, nodesID, codec.Protobuf(nil), nil, nodes, "401", page)
}

// fill stores objs as a committed relist of id at rv.
func fill(t testing.TB, db *bolt.DB, id bolt.Identity, c codec.Codec, ix cache.Indexers, objs []interface{}, rv string, page int) {
	t.Helper()
	fillResource(t, db, bolt.ResourceOptions{Identity: id, Codec: c, Indexers: ix}, objs, rv, page)
}

// fillResource stores objs as a committed relist at rv of the resource
// opts opens.
func fillResource(t testing.TB, db *bolt.DB, opts bolt.ResourceOptions, objs []interface{}, rv string, page int) {
	t.Helper()
	ctx := context.Background()
	s, err := db.Resource(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.BeginReplace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(objs); i += page {
		if err := r.Add(ctx, objs[i:min(i+page, len(objs))]...); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Commit(ctx, rv); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// fixture writes a fixture into a new directory and returns its path.
func fixture(t testing.TB, o fixtureOptions) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	writeFixture(t, path, o)
	return path
}

// result is what one run of the command produced.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the command in-process with the test clock.
func run(t testing.TB, args ...string) result {
	t.Helper()
	return runEnv(t, Env{}, args...)
}

func runEnv(t testing.TB, env Env, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env.Stdout, env.Stderr = &stdout, &stderr
	if env.Now == nil {
		env.Now = func() time.Time { return testNow }
	}
	code := Run(context.Background(), env, args)
	r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	if strings.Contains(r.stderr, "internal error") {
		t.Fatalf("snapshot %q panicked:\n%s", args, r.stderr)
	}
	return r
}

// fileState is what must not change when a command inspects a file.
type fileState struct {
	sum   [32]byte
	size  int64
	mtime time.Time
	mode  os.FileMode
}

func stateOf(t testing.TB, path string) fileState {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{sum: sha256.Sum256(b), size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode()}
}

// unchanged fails the test at its end if the file at path changed in bytes,
// size, mode or modification time.
func unchanged(t testing.TB, path string) {
	t.Helper()
	before := stateOf(t, path)
	t.Cleanup(func() {
		if after := stateOf(t, path); after != before {
			t.Errorf("%s changed: before %+v, after %+v", path, before, after)
		}
	})
}

// mutate changes the file at path directly with bbolt, as a corruption or
// another program would.
func mutate(t testing.TB, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// liveGeneration returns the live generation bucket of a resource (see the
// layout in store/bolt/layout.go).
func liveGeneration(t testing.TB, tx *bbolt.Tx, id bolt.Identity) *bbolt.Bucket {
	t.Helper()
	res := tx.Bucket([]byte(id.String()))
	if res == nil {
		t.Fatalf("no bucket %s", id)
	}
	live := res.Get([]byte("live")) // generation number, checksum
	if len(live) != 12 {
		t.Fatalf("live pointer of %d bytes in %s", len(live), id)
	}
	gen := res.Bucket([]byte("gen")).Bucket(live[:8])
	if gen == nil {
		t.Fatalf("no live generation in %s", id)
	}
	return gen
}

// The checksums of the file's records (store/bolt/internal/layout's
// checksum.go): a CRC-32C of the key the record is bound to and of the
// record's bytes before the checksum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksummed appends to body the checksum of key and body.
func checksummed(key string, body []byte) []byte {
	sum := crc32.Update(crc32.Checksum([]byte(key), castagnoli), castagnoli, body)
	return binary.BigEndian.AppendUint32(body, sum)
}

// setEnvelope replaces the envelope (in the live generation's blobs
// bucket) of the item stored under key, which must exist, with body and a
// valid checksum (a msgpack uint32): an envelope a bug wrote.
func setEnvelope(t testing.TB, tx *bbolt.Tx, id bolt.Identity, key string, body []byte) error {
	t.Helper()
	gen := liveGeneration(t, tx, id)
	entry := gen.Bucket([]byte("items")).Get([]byte(key))
	if len(entry) < 8 {
		t.Fatalf("no item %q in %s", key, id)
	}
	env := checksummed(key, append(slices.Clone(body), 0xce))
	return gen.Bucket([]byte("blobs")).Put(append([]byte(nil), entry[:8]...), env)
}

// indexEntryValue is the value (its checksum) of the entry k of index
// name.
func indexEntryValue(name string, k []byte) []byte {
	return checksummed(name+"\x00", slices.Clone(k))[len(k):]
}

// editMeta rewrites fields of a resource's meta (msgpack, by name, and a
// checksum).
func editMeta(t testing.TB, tx *bbolt.Tx, id bolt.Identity, fields map[string]interface{}) error {
	t.Helper()
	res := tx.Bucket([]byte(id.String()))
	var m map[string]interface{}
	if err := msgpack.Unmarshal(res.Get([]byte("meta")), &m); err != nil { // the map, not the checksum after it
		return err
	}
	for k, v := range fields {
		m[k] = v
	}
	b, err := msgpack.Marshal(m)
	if err != nil {
		return err
	}
	return res.Put([]byte("meta"), checksummed("", append(b, 0xce)))
}

// copyFile copies src to a new file in dir.
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
