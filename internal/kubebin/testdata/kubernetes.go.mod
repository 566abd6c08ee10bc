// A trimmed copy of k8s.io/kubernetes v1.36.3's go.mod.

module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	github.com/spf13/cobra v1.10.2
	go.etcd.io/etcd/client/v3 v3.6.8
	k8s.io/api v0.0.0
	k8s.io/apiserver v0.0.0
	k8s.io/client-go v0.0.0
)

require (
	go.etcd.io/etcd/server/v3 v3.6.8 // indirect
	golang.org/x/mod v0.32.0 // indirect
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apiserver => ./staging/src/k8s.io/apiserver
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/example/forked => github.com/example/fork v1.2.3
	github.com/example/local => ../local
)
