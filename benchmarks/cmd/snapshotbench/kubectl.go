package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	"github.com/warmcache/warmcache/store/bolt"
)

// kubectlChild measures kubectl's printer of format on the pods of the
// cache file at path and writes the sample as JSON to stdout. The objects
// are first read from the file and encoded as the API server sends them
// (JSON, with their kind): that part is the server's, not measured. The
// measured part is kubectl get's: the objects decoded as unstructured
// objects, put in a v1 List, marshalled and decoded again as an
// unstructured List, printed by k8s.io/cli-runtime's printer.
func kubectlChild(ctx context.Context, format, path string, stdout io.Writer) error {
	raw, err := serverJSON(ctx, path)
	if err != nil {
		return err
	}
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	if format == "yaml" {
		p = &printers.YAMLPrinter{}
	}
	// As kubectl get without --show-managed-fields.
	p = &printers.OmitManagedFieldsPrinter{Delegate: p}
	sampler, err := procmem.Start(0, 0)
	if err != nil {
		return err
	}
	sampler.Reset()
	cpu0, _ := measure.ProcessCPU()
	start := time.Now()
	var out countingWriter
	if err := kubectlGet(raw, p, &out); err != nil {
		return err
	}
	wall := time.Since(start)
	cpu1, _ := measure.ProcessCPU()
	peak, err := sampler.Stop()
	if err != nil {
		return err
	}
	// The peak includes the JSON received, which kubectl holds too.
	return json.NewEncoder(stdout).Encode(sample{Wall: wall, CPU: cpu1 - cpu0, PeakAnon: peak.Anon, Bytes: out.n, Sum: out.sum()})
}

// serverJSON returns the JSON of the file's pods as the API server
// serves them.
func serverJSON(ctx context.Context, path string) ([][]byte, error) {
	db, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	s, err := db.Resource(ctx, storebench.BoltResource())
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var raw [][]byte
	err = s.Scan(ctx, func(_ string, obj interface{}) error {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("%T in the pods of %s", obj, path)
		}
		p = p.DeepCopy()
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		raw = append(raw, b)
		return nil
	})
	return raw, err
}

// kubectlGet is what kubectl get -o json|yaml does with the objects it
// received (k8s.io/kubectl/pkg/cmd/get, several objects, not a table).
func kubectlGet(raw [][]byte, p printers.ResourcePrinter, w io.Writer) error {
	list := corev1.List{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}}
	for _, b := range raw {
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, b)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, runtime.RawExtension{Object: obj})
	}
	listData, err := json.Marshal(list)
	if err != nil {
		return err
	}
	converted, err := runtime.Decode(unstructured.UnstructuredJSONScheme, listData)
	if err != nil {
		return err
	}
	items, err := meta.ExtractList(converted)
	if err != nil {
		return err
	}
	out := &unstructured.UnstructuredList{Object: map[string]interface{}{
		"kind": "List", "apiVersion": "v1", "metadata": map[string]interface{}{"resourceVersion": ""},
	}}
	for _, item := range items {
		out.Items = append(out.Items, *item.(*unstructured.Unstructured))
	}
	return p.PrintObj(out, w)
}
