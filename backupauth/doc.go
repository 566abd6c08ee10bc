// Package backupauth decides who may download a cache file from
// bolt.DB.BackupHandler, which serves every cached object, Secrets
// included.
//
// Kubernetes checks a bearer token with the apiserver, as the
// apiserver's own delegated authentication and controller-runtime's secure
// metrics do: a TokenReview says whose token it is, then a
// SubjectAccessReview asks whether that user may get the handler's path (a
// non-resource URL) or, with KubernetesOptions.Resource, a resource of your
// choosing. Decisions are cached for a short time. StaticToken compares a
// token shared out of band.
//
//	auth, err := backupauth.NewKubernetes(clientset, backupauth.KubernetesOptions{})
//	if err != nil {
//		return err
//	}
//	h, err := db.BackupHandler(bolt.BackupHandlerOptions{Authorizer: auth})
//	if err != nil {
//		return err
//	}
//	mux.Handle("/debug/warmcache/backup", h)
//
// The controller's own service account needs to create the reviews:
//
//	apiVersion: rbac.authorization.k8s.io/v1
//	kind: ClusterRole
//	metadata:
//	  name: my-controller-review-tokens
//	rules:
//	- apiGroups: [authentication.k8s.io]
//	  resources: [tokenreviews]
//	  verbs: [create]
//	- apiGroups: [authorization.k8s.io]
//	  resources: [subjectaccessreviews]
//	  verbs: [create]
//
// and whoever downloads the backup needs get on its path (for a GET or a
// HEAD alike), granted by a ClusterRole (non-resource URLs are cluster-wide)
// bound to that user or service account:
//
//	apiVersion: rbac.authorization.k8s.io/v1
//	kind: ClusterRole
//	metadata:
//	  name: my-controller-cache-backup
//	rules:
//	- nonResourceURLs: ["/debug/warmcache/backup"]
//	  verbs: [get]
//
// A bearer token sent over plain HTTP can be read by anyone on the path, and
// a token the endpoint accepts is one the apiserver accepts too: serve the
// handler over HTTPS, or bind it to 127.0.0.1 and reach it with kubectl
// port-forward.
package backupauth
