package factory

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// ClusterIdentityNamespace is the namespace whose UID identifies a cluster
// by default (Options.ClusterID): every cluster has it from its creation,
// and a recreated cluster (a fresh etcd) gives it a new UID.
const ClusterIdentityNamespace = "kube-system"

// clusterLookupTimeout bounds the GET of ClusterIdentityNamespace in New.
const clusterLookupTimeout = 10 * time.Second

// clusterID returns the identity of the cluster the factory's file caches:
// opts.ClusterID when set, else the UID of ClusterIdentityNamespace read
// with one GET through opts.RESTConfig. When that is impossible (no
// RESTConfig, or the GET fails, for example forbidden by RBAC) the
// identity is unknown, "", and a log line says why; see Options.ClusterID.
func clusterID(ctx context.Context, opts Options, logger klog.Logger) string {
	if opts.ClusterID != "" {
		return opts.ClusterID
	}
	if opts.RESTConfig == nil {
		logger.V(2).Info("No RESTConfig to identify the cluster; set Options.ClusterID so that a file from another cluster is discarded")
		return ""
	}
	uid, err := lookupClusterID(ctx, opts.RESTConfig, opts.Scheme)
	if err != nil {
		logger.Info("Could not identify the cluster; its identity is recorded as unknown, and only a resourceVersion ahead of the server's reveals a recreated cluster (set Options.ClusterID to supply it)",
			"namespace", ClusterIdentityNamespace, "err", err)
		return ""
	}
	return uid
}

// lookupClusterID returns the UID of ClusterIdentityNamespace.
func lookupClusterID(ctx context.Context, config *rest.Config, s *runtime.Scheme) (string, error) {
	c, err := restClientFor(config, s, corev1.SchemeGroupVersion, nil)
	if err != nil {
		return "", fmt.Errorf("cluster identity: client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, clusterLookupTimeout)
	defer cancel()
	var ns corev1.Namespace
	err = c.Get().Resource("namespaces").Name(ClusterIdentityNamespace).
		VersionedParams(&metav1.GetOptions{}, metav1.ParameterCodec).Do(ctx).Into(&ns)
	if err != nil {
		return "", fmt.Errorf("cluster identity: get namespace %s: %w", ClusterIdentityNamespace, err)
	}
	if ns.UID == "" {
		return "", fmt.Errorf("cluster identity: namespace %s has no UID", ClusterIdentityNamespace)
	}
	return string(ns.UID), nil
}
