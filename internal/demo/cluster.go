package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/warmcache/warmcache/internal/podgen"
)

// Errors of this package; returned errors wrap one of them with the
// operation and object concerned. Test with errors.Is.
var (
	// ErrInvalidOptions reports options or arguments that cannot work.
	ErrInvalidOptions = errors.New("demo: invalid options")
	// ErrAPI reports a failed request to the apiserver.
	ErrAPI = errors.New("demo: apiserver request failed")
	// ErrController reports that the demo controller failed: it could
	// not be built or started, exited with an error, or wrote no stats.
	ErrController = errors.New("demo: controller failed")
)

// WriteKubeconfig writes a kubeconfig file at path that reaches the
// apiserver of config with its bearer token and CA data, so that a child
// process can use it (--kubeconfig). Only those credentials are carried
// over: config must authenticate with BearerToken and verify the server
// with CAData (as testenv's RestConfig does).
func WriteKubeconfig(config *rest.Config, path string) error {
	if config == nil || config.Host == "" {
		return fmt.Errorf("%w: write kubeconfig %s: no host", ErrInvalidOptions, path)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["demo"] = &clientcmdapi.Cluster{
		Server:                   config.Host,
		CertificateAuthorityData: config.CAData,
		InsecureSkipTLSVerify:    config.Insecure,
		TLSServerName:            config.ServerName,
	}
	kc.AuthInfos["demo"] = &clientcmdapi.AuthInfo{Token: config.BearerToken}
	kc.Contexts["demo"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: "demo"}
	kc.CurrentContext = "demo"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("demo: write kubeconfig %s: %w", path, err)
	}
	return nil
}

// EnsureNamespaces creates the namespaces that do not exist yet.
func EnsureNamespaces(ctx context.Context, cs kubernetes.Interface, names ...string) error {
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%w: create namespace %s: %w", ErrAPI, name, err)
		}
	}
	return nil
}

// PodOptions configures CreatePods.
type PodOptions struct {
	// Namespace puts every pod in this namespace; it must exist. Default
	// "": podgen's namespaces (ns-000 ... ns-049), created if missing.
	Namespace string
	// First is the index of the first generated pod (podgen.Pod(First)),
	// so that successive calls create distinct pods. Default 0.
	First int
	// Workers is the number of concurrent creates. Default 8.
	Workers int
	// Progress, when set, is called after each created pod with the
	// number created so far by this call. It is called from the workers,
	// concurrently; it must be fast.
	Progress func(done int)
}

// NewPod returns podgen's i-th pod prepared for a create: server-owned
// metadata (resourceVersion, UID, creation time, managed fields) cleared,
// and put in namespace unless that is "". Its status is what podgen
// generates; a create drops it (the apiserver resets a new pod's status).
func NewPod(i int, namespace string) *corev1.Pod {
	p := podgen.Pod(i)
	p.ResourceVersion = ""
	p.UID = ""
	p.CreationTimestamp = metav1.Time{}
	p.ManagedFields = nil
	p.GenerateName = ""
	if namespace != "" {
		p.Namespace = namespace
	}
	return p
}

// CreatePods creates n pods (podgen's pods First ... First+n-1) with
// opts.Workers concurrent requests and returns the first error, after
// which the remaining creates are abandoned.
func CreatePods(ctx context.Context, cs kubernetes.Interface, n int, opts PodOptions) error {
	if n < 0 || opts.First < 0 || opts.Workers < 0 {
		return fmt.Errorf("%w: create pods: negative count %d, first %d or workers %d", ErrInvalidOptions, n, opts.First, opts.Workers)
	}
	if opts.Workers == 0 {
		opts.Workers = 8
	}
	if opts.Namespace == "" {
		names := make([]string, 0, podgen.Namespaces)
		for i := 0; i < podgen.Namespaces && i < n; i++ {
			names = append(names, podgen.Pod(opts.First+i).Namespace)
		}
		if err := EnsureNamespaces(ctx, cs, names...); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range opts.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				p := NewPod(opts.First+i, opts.Namespace)
				if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					cancel(fmt.Errorf("%w: create pod %s/%s: %w", ErrAPI, p.Namespace, p.Name, err))
					return
				}
				d := done.Add(1)
				if opts.Progress != nil {
					opts.Progress(int(d))
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}
