package factory

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/store"
)

// Scope restricts what an informer lists and watches (namespace,
// selectors, shard). It is part of the identity recorded in the cache
// file: informers of different scopes never share data. Selectors are
// canonicalised by store.Scope.Canonical. Its Shard is sent as the
// server-side shard selector, and every list answer is checked to be that
// shard (ErrShardIgnored; see the package documentation).
type Scope = store.Scope

// tweak applies the scope's selectors to list options: the label and
// field selectors, and the shard as the server-side shard selector
// (ListOptions.ShardSelector, alpha in kube-apiserver 1.36 behind the
// ShardedListAndWatch gate; see docs/scale-out.md).
func tweak(s Scope, o *metav1.ListOptions) {
	if s.LabelSelector != "" {
		o.LabelSelector = s.LabelSelector
	}
	if s.FieldSelector != "" {
		o.FieldSelector = s.FieldSelector
	}
	if s.Shard != "" {
		o.ShardSelector = s.Shard
	}
}

// nameOf names the informer of gvr in scope s (logs, metrics, the
// factory's map).
func nameOf(gvr schema.GroupVersionResource, s Scope) string {
	var b strings.Builder
	b.WriteString(gvr.Resource)
	if gvr.Group != "" {
		b.WriteString("." + gvr.Group)
	}
	b.WriteString("/" + gvr.Version)
	for _, kv := range [][2]string{{"ns", s.Namespace}, {"labels", s.LabelSelector}, {"fields", s.FieldSelector}, {"shard", s.Shard}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%q", kv[0], kv[1])
		}
	}
	return b.String()
}
