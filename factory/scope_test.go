package factory

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTweakSendsTheScope: the scope's selectors and shard reach the list
// and watch options the server gets; an empty scope leaves the options
// (a user's own tweak) as they were.
func TestTweakSendsTheScope(t *testing.T) {
	shard := "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	var o metav1.ListOptions
	tweak(Scope{Namespace: "ns", LabelSelector: "app=a", FieldSelector: "spec.nodeName=n1", Shard: shard}, &o)
	want := metav1.ListOptions{LabelSelector: "app=a", FieldSelector: "spec.nodeName=n1", ShardSelector: shard}
	if o != want {
		t.Fatalf("options = %+v, want %+v", o, want)
	}
	kept := metav1.ListOptions{LabelSelector: "mine=1", ShardSelector: "mine"}
	o = kept
	tweak(Scope{}, &o)
	if o != kept {
		t.Fatalf("an empty scope changed the options: %+v, want %+v", o, kept)
	}
}
