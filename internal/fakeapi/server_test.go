package fakeapi

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/internal/fakesource"
)

func TestOptionsErrors(t *testing.T) {
	src := newSource(t, 0)
	tests := []struct {
		name string
		opts Options
	}{
		{"no source", Options{}},
		{"resource without kind", Options{Source: src, Resources: []Resource{{GroupVersionResource: Pods.GroupVersionResource}}}},
		{"resource without version", Options{Source: src, Resources: []Resource{{Kind: "Pod"}}}},
		{"duplicate resource", Options{Source: src, Resources: []Resource{Pods, Pods}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewHandler(tt.opts); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("NewHandler = %v, want ErrInvalidOptions", err)
			}
			if s, err := Start(context.Background(), tt.opts); !errors.Is(err, ErrInvalidOptions) || s != nil {
				t.Errorf("Start = %v, %v, want ErrInvalidOptions", s, err)
			}
		})
	}
}

func TestCloseEndsOpenWatches(t *testing.T) {
	src := newSource(t, 2)
	s, err := Start(context.Background(), Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	cs := clientset(t, s, "application/vnd.kubernetes.protobuf", nil)
	w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{ResourceVersion: src.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := src.WaitFor(context.Background(), func(st fakesource.Stats) bool { return st.OpenWatches == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close returned after the handler did, so the source's watch ended.
	if n := src.Stats().OpenWatches; n != 0 {
		t.Errorf("%d watches open on the source after Close", n)
	}
	for range w.ResultChan() {
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("list after Close succeeded")
	}
}
