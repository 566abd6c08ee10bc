package demo

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/warmcache/warmcache/internal/podgen"
)

func TestWriteKubeconfigRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	want := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "secret", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}
	if err := WriteKubeconfig(want, path); err != nil {
		t.Fatal(err)
	}
	got, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != want.Host || got.BearerToken != want.BearerToken || string(got.CAData) != "ca" {
		t.Errorf("read back %+v", got)
	}
	if err := WriteKubeconfig(&rest.Config{}, path); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("WriteKubeconfig without a host = %v, want ErrInvalidOptions", err)
	}
}

func TestNewPodClearsServerOwnedMetadata(t *testing.T) {
	p := NewPod(7, "mine")
	if p.ResourceVersion != "" || p.UID != "" || !p.CreationTimestamp.IsZero() || p.ManagedFields != nil || p.GenerateName != "" {
		t.Errorf("server-owned metadata left in %+v", p.ObjectMeta)
	}
	if p.Namespace != "mine" || p.Name == "" {
		t.Errorf("pod %s/%s, want a name in namespace mine", p.Namespace, p.Name)
	}
	if NewPod(7, "").Namespace == "" {
		t.Error("NewPod without a namespace dropped podgen's")
	}
}

func TestCreatePods(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	var mu sync.Mutex
	most := 0
	progress := func(done int) {
		mu.Lock()
		most = max(most, done)
		mu.Unlock()
	}
	if err := CreatePods(ctx, cs, 120, PodOptions{First: 10, Workers: 3, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 120 || most != 120 {
		t.Errorf("created %d pods, progress reached %d; want 120", len(pods.Items), most)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nss.Items) != podgen.Namespaces {
		t.Errorf("%d namespaces created, want podgen's %d", len(nss.Items), podgen.Namespaces)
	}
	if err := CreatePods(ctx, cs, 1, PodOptions{Workers: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative workers = %v, want ErrInvalidOptions", err)
	}
}

// TestCreatePodsStopsAtFirstError: a failing create ends the call with
// ErrAPI and the server's error.
func TestCreatePodsStopsAtFirstError(t *testing.T) {
	cs := fake.NewClientset()
	boom := errors.New("boom")
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, boom })
	err := CreatePods(context.Background(), cs, 50, PodOptions{Namespace: "default"})
	if !errors.Is(err, ErrAPI) || !errors.Is(err, boom) {
		t.Errorf("CreatePods = %v, want ErrAPI wrapping the server's error", err)
	}
}
