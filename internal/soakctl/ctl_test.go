package soakctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/eventlog"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHandler: every event is one JSON line naming the resource, the key,
// the resourceVersions and the flags.
func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	h := handler{resource: "pods", log: eventlog.New[Event](logr.Discard(), &buf)}
	h.OnAdd(testkit.Pod("a", "1"), true)
	h.OnAdd(testkit.Pod("b", "2"), false)
	h.OnUpdate(testkit.Pod("a", "1"), testkit.Pod("a", "3"))
	h.OnDelete(testkit.Pod("b", "2"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: testkit.Pod("c", "4")})
	w := &unstructured.Unstructured{}
	w.SetNamespace("ns")
	w.SetName("w")
	w.SetResourceVersion("5")
	handler{resource: "widgets", log: h.log}.OnAdd(w, false)
	want := []Event{
		{Type: TypeAdd, Resource: "pods", Key: "ns/a", ResourceVersion: "1", Initial: true},
		{Type: TypeAdd, Resource: "pods", Key: "ns/b", ResourceVersion: "2"},
		{Type: TypeUpdate, Resource: "pods", Key: "ns/a", ResourceVersion: "3", OldResourceVersion: "1"},
		{Type: TypeDelete, Resource: "pods", Key: "ns/b", ResourceVersion: "2"},
		{Type: TypeDelete, Resource: "pods", Key: "ns/c", ResourceVersion: "4", FinalStateUnknown: true},
		{Type: TypeAdd, Resource: "widgets", Key: "ns/w", ResourceVersion: "5"},
	}
	dec := json.NewDecoder(&buf)
	for i, w := range want {
		var e Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if e != w {
			t.Errorf("line %d = %+v, want %+v", i, e, w)
		}
	}
	if dec.More() {
		t.Error("more lines than events")
	}
}

func TestRunConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.db")
	for _, cfg := range []Config{
		{},
		{RESTConfig: &rest.Config{}, EventLog: &bytes.Buffer{}},
		{RESTConfig: &rest.Config{}, CacheFile: file},
		{RESTConfig: &rest.Config{}, CacheFile: file, EventLog: &bytes.Buffer{}, RuntimeInterval: -1},
	} {
		if err := Run(t.Context(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Run(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestMainUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"unknown flag", []string{"--no-such-flag"}, ExitUsage},
		{"no kubeconfig", []string{"--cache-file", "c.db"}, ExitUsage},
		{"positional argument", []string{"--kubeconfig", "k", "extra"}, ExitUsage},
		{"missing kubeconfig file", []string{"--kubeconfig", filepath.Join(t.TempDir(), "missing"), "--cache-file", "c.db"}, ExitUsage},
		{"help", []string{"-h"}, ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := Main(t.Context(), tc.args, &stdout, &stderr); got != tc.want {
				t.Errorf("Main(%q) = %d, want %d; stderr:\n%s", tc.args, got, tc.want, stderr.String())
			}
		})
	}
}

func TestWidgetCRD(t *testing.T) {
	crd := WidgetCRD()
	if crd.GetName() != WidgetGVR.Resource+"."+WidgetGVR.Group {
		t.Errorf("CRD named %q", crd.GetName())
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	if group != WidgetGVR.Group || plural != WidgetGVR.Resource {
		t.Errorf("CRD serves %s.%s, want %s", plural, group, WidgetGVR)
	}
	if !Resources[2].Dynamic() || Resources[0].Dynamic() {
		t.Error("only the custom resource is dynamic")
	}
}
