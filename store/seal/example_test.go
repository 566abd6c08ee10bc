package seal_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// A key file as a mounted Kubernetes Secret holds it: one base64 key per
// line, the first the one that encrypts.
func ExampleFromFile() {
	dir, err := os.MkdirTemp("", "keys")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "keys")
	// In production: openssl rand -base64 32, once per key.
	text := "WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlo=\nYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		panic(err)
	}
	keys, err := seal.FromFile(path).Keys(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(len(keys), "keys; new writes sealed with", keys[0].ID())
	// Output: 2 keys; new writes sealed with be061d64e736df60
}

// A sealed codec wraps the resource's codec; the store passes each item's
// additional data (codec.Bound), so a payload opens only where it was
// stored.
func ExampleNewCodec() {
	key, err := seal.NewKey(bytes.Repeat([]byte{0x5a}, seal.KeySize))
	if err != nil {
		panic(err)
	}
	c, err := seal.NewCodec(codec.Protobuf(nil), []seal.Key{key})
	if err != nil {
		panic(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "db", ResourceVersion: "7"},
		Data:       map[string][]byte{"password": []byte("hunter2")},
	}
	item := []byte("secrets prod/db 7")
	data, err := c.EncodeBound(nil, secret, item)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Name(), bytes.Contains(data, []byte("hunter2")))
	obj, err := c.DecodeBound(data, item)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(obj.(*corev1.Secret).Data["password"]))
	_, err = c.DecodeBound(data, []byte("secrets prod/web 7"))
	fmt.Println(err)
	// Output:
	// sealed-aes256gcm+protobuf false
	// hunter2
	// seal: key be061d64e736df60: sealed payload does not authenticate
}
