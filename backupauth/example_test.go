package backupauth_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/backupauth"
	"github.com/warmcache/warmcache/store/bolt"
)

// Serve a cache file's backup to the callers the apiserver allows: those
// whose bearer token authenticates and whose user may get
// /debug/warmcache/backup.
func ExampleNewKubernetes() {
	// In a controller: rest.InClusterConfig() or the kubeconfig's.
	config := &rest.Config{Host: "https://kubernetes.default.svc"}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Println(err)
		return
	}
	auth, err := backupauth.NewKubernetes(client, backupauth.KubernetesOptions{Path: "/debug/warmcache/backup"})
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer func() { _ = os.RemoveAll(dir) }()
	db, err := bolt.Open(context.Background(), filepath.Join(dir, "cache.db"), bolt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = db.Close() }()
	h, err := db.BackupHandler(bolt.BackupHandlerOptions{Authorizer: auth})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/warmcache/backup", h)
	// Serve mux over HTTPS (http.ListenAndServeTLS): a bearer token over
	// plain HTTP can be read on the wire.
	fmt.Println("mounted")
	// Output: mounted
}

// Serve a cache file's backup to the callers that send a token shared out
// of band, for example mounted from a Secret.
func ExampleStaticToken() {
	auth, err := backupauth.StaticToken("s3cr3t-from-a-mounted-secret")
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer func() { _ = os.RemoveAll(dir) }()
	db, err := bolt.Open(context.Background(), filepath.Join(dir, "cache.db"), bolt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = db.Close() }()
	h, err := db.BackupHandler(bolt.BackupHandlerOptions{Authorizer: auth})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, token := range []string{"", "guess-guess-guess-guess", "s3cr3t-from-a-mounted-secret"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		fmt.Println(resp.Status, n > 4096)
	}
	// Output:
	// 401 Unauthorized false
	// 401 Unauthorized false
	// 200 OK true
}
