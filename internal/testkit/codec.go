package testkit

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PodJSONName is the name of a PodJSON whose CodecName is empty.
const PodJSONName = "test-pod-json"

// PodJSON is a small codec for *corev1.Pod (it has the methods of
// store/codec's Codec): encoding/json, which is lossless for pods, under a
// name package codec does not know, so that a file written with it is
// readable only by a store given a PodJSON. Encode refuses anything but a
// *corev1.Pod; Decode returns a new *corev1.Pod, or the error of malformed
// data. It is safe for concurrent use.
type PodJSON struct {
	// CodecName is the name the codec records; empty is PodJSONName.
	CodecName string
}

// Name returns c.CodecName, or PodJSONName when it is empty.
func (c PodJSON) Name() string {
	if c.CodecName != "" {
		return c.CodecName
	}
	return PodJSONName
}

// Encode appends obj's JSON to dst.
func (PodJSON) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("testkit.PodJSON: %T is not a pod", obj)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// Decode decodes data into a new pod.
func (PodJSON) Decode(data []byte) (runtime.Object, error) {
	p := &corev1.Pod{}
	if err := json.Unmarshal(data, p); err != nil {
		return nil, err
	}
	return p, nil
}
