package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/backupauth"
	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

const (
	backupNS   = "ops"
	backupPath = "/debug/warmcache/backup"
	// backupAudience is the audience of tokens meant for the backup only.
	backupAudience = "warmcache-backup"
)

var backupPods = bolt.ResourceOptions{Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"}, Codec: codec.Protobuf(nil)}

// TestBackupAuthorization serves a cache file's backup behind the
// Kubernetes authorizer of package backupauth, against an apiserver with
// RBAC, and checks who gets it: no token or an invalid one 401, a service
// account without the documented RBAC rule 403, one with it the file. The
// controller's own service account has exactly the rules the package
// documents for it; without them the check fails (500). A token requested
// for the backup's audience reads the backup of a handler that asks for
// that audience, and nothing of the apiserver.
func TestBackupAuthorization(t *testing.T) {
	t.Parallel() // its own cluster; nothing shared with other tests
	ctx := needEnv(t)
	c := startCluster(ctx, t, "--authorization-mode=RBAC")
	if err := demo.EnsureNamespaces(ctx, c.cs, backupNS); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, sa := range []string{"controller", "reader", "stranger"} {
		tokens[sa] = serviceAccountToken(ctx, t, c.cs, sa)
	}
	grant(ctx, t, c.cs, "review-tokens", "controller", []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	})
	grant(ctx, t, c.cs, "cache-backup", "reader", []rbacv1.PolicyRule{{NonResourceURLs: []string{backupPath}, Verbs: []string{"get"}}})
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cache-backup", Namespace: backupNS},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"warmcache.io"}, Resources: []string{"backups"}, ResourceNames: []string{"my-controller"}, Verbs: []string{"get"}}}}
	if _, err := c.cs.RbacV1().Roles(backupNS).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cache-backup", Namespace: backupNS},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cache-backup"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: backupNS, Name: "reader"}}}
	if _, err := c.cs.RbacV1().RoleBindings(backupNS).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resource := &authorizationv1.ResourceAttributes{Namespace: backupNS, Group: "warmcache.io", Resource: "backups", Name: "my-controller"}
	// RBAC applies new bindings through the apiserver's informers: wait
	// until it does, so that no test decision (cached) predates them.
	waitAllowed(ctx, t, c.cs, "controller", authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}})
	waitAllowed(ctx, t, c.cs, "reader", authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: backupPath, Verb: "get"}})
	withVerb := *resource
	withVerb.Verb = "get" // NewKubernetes's default
	waitAllowed(ctx, t, c.cs, "reader", authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &withVerb})

	// The controller: a cache file with pods, its backup behind the
	// authorizer, the reviews made with the controller's own token.
	db, err := bolt.Open(ctx, filepath.Join(t.TempDir(), "cache.db"), bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	pods, err := db.Resource(ctx, backupPods)
	if err != nil {
		t.Fatal(err)
	}
	var objs []interface{}
	for i := range 50 {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: backupNS, Name: fmt.Sprintf("p-%02d", i), ResourceVersion: strconv.Itoa(100 + i)}})
	}
	if err := pods.Replace(objs, "200"); err != nil {
		t.Fatal(err)
	}
	handler := func(client kubernetes.Interface, opts backupauth.KubernetesOptions) http.Handler {
		auth, err := backupauth.NewKubernetes(client, opts)
		if err != nil {
			t.Fatal(err)
		}
		h, err := db.BackupHandler(bolt.BackupHandlerOptions{Authorizer: auth})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	asController, asStranger := c.clientAs(t, tokens["controller"]), c.clientAs(t, tokens["stranger"])
	mux := http.NewServeMux()
	mux.Handle(backupPath, handler(asController, backupauth.KubernetesOptions{}))
	mux.Handle("/by-resource", handler(asController, backupauth.KubernetesOptions{Resource: resource}))
	mux.Handle("/cannot-review", handler(asStranger, backupauth.KubernetesOptions{}))
	mux.Handle("/audience", handler(asController, backupauth.KubernetesOptions{Path: backupPath, Audiences: []string{backupAudience}}))
	audienceToken := requestToken(ctx, t, c.cs, "reader", backupAudience)
	// A token for the backup's audience does not authenticate to the
	// apiserver itself.
	if _, err := c.clientAs(t, audienceToken).CoreV1().Namespaces().Get(ctx, backupNS, metav1.GetOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("the apiserver with a token for audience %s: %v, want 401", backupAudience, err)
	}
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)

	tests := []struct {
		name, path, token string
		wantStatus        int
		wantBody          string
	}{
		{"anonymous", backupPath, "", http.StatusUnauthorized, "no bearer token"},
		{"invalid token", backupPath, "not-a-token", http.StatusUnauthorized, "the apiserver does not accept the bearer token"},
		{"tampered token", backupPath, tokens["reader"][:len(tokens["reader"])-4] + "AAAA", http.StatusUnauthorized, "the apiserver does not accept the bearer token"},
		{"unauthorized", backupPath, tokens["stranger"], http.StatusForbidden, `user "system:serviceaccount:ops:stranger" may not get ` + backupPath},
		{"unauthorized by resource", "/by-resource", tokens["stranger"], http.StatusForbidden, "may not get backups.warmcache.io my-controller in namespace ops"},
		{"controller may not review", "/cannot-review", tokens["reader"], http.StatusInternalServerError, "the authorization check failed"},
		{"authorized", backupPath, tokens["reader"], http.StatusOK, ""},
		{"authorized by resource", "/by-resource", tokens["reader"], http.StatusOK, ""},
		{"token for the apiserver's audience", "/audience", tokens["reader"], http.StatusUnauthorized, "the apiserver does not accept the bearer token"},
		{"audience token for the apiserver", backupPath, audienceToken, http.StatusUnauthorized, "the apiserver does not accept the bearer token"},
		{"token for the backup's audience", "/audience", audienceToken, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("GET %s = %s %q, want %d", tt.path, resp.Status, truncate(body), tt.wantStatus)
			}
			if challenge := resp.Header.Get("WWW-Authenticate"); (resp.StatusCode == http.StatusUnauthorized) != strings.HasPrefix(challenge, "Bearer ") {
				t.Errorf("%s with WWW-Authenticate %q", resp.Status, challenge)
			}
			if resp.StatusCode != http.StatusOK {
				if !strings.Contains(string(body), tt.wantBody) {
					t.Errorf("body %q lacks %q", body, tt.wantBody)
				}
				return
			}
			checkBackupCopy(ctx, t, body, len(objs), "200")
		})
	}
}

// truncate shortens a body for a message.
func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// checkBackupCopy checks that body is a cache file holding n pods at rv.
func checkBackupCopy(ctx context.Context, t *testing.T, body []byte, n int, rv string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the backup does not open: %v", err)
	}
	defer func() { _ = db.Close() }()
	pods, err := db.Resource(ctx, backupPods)
	if err != nil {
		t.Fatal(err)
	}
	st, err := pods.State()
	if err != nil {
		t.Fatal(err)
	}
	keys := pods.ListKeys()
	if st.ResourceVersion != rv || !st.Complete || st.Objects != n || len(keys) != n {
		t.Errorf("backup: rv %s complete %v, %d objects (%d keys); want rv %s, %d", st.ResourceVersion, st.Complete, st.Objects, len(keys), rv, n)
	}
}

// serviceAccountToken creates service account name in backupNS and returns
// a token for it (TokenRequest).
func serviceAccountToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: backupNS}}
	if _, err := cs.CoreV1().ServiceAccounts(backupNS).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return requestToken(ctx, t, cs, name)
}

// requestToken returns a token of service account name in backupNS for
// audiences (default: the apiserver's).
func requestToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, audiences ...string) string {
	t.Helper()
	expiry := int64(time.Hour / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(backupNS).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry, Audiences: audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s: %v", name, err)
	}
	return tr.Status.Token
}

// grant creates ClusterRole name with rules, bound to service account sa of
// backupNS.
func grant(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, sa string, rules []rbacv1.PolicyRule) {
	t.Helper()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: backupNS, Name: sa}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAllowed waits until the apiserver allows service account sa of
// backupNS what spec asks.
func waitAllowed(ctx context.Context, t *testing.T, cs kubernetes.Interface, sa string, spec authorizationv1.SubjectAccessReviewSpec) {
	t.Helper()
	spec.User = "system:serviceaccount:" + backupNS + ":" + sa
	spec.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + backupNS, "system:authenticated"}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("RBAC never allowed %s %+v: %v", sa, spec, err)
	}
}

// clientAs returns a client that authenticates with token.
func (c *cluster) clientAs(t *testing.T, token string) kubernetes.Interface {
	t.Helper()
	config := c.env.RestConfig()
	config.BearerToken = token
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
