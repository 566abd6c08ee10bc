package backupauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/store/bolt"
)

// fakeAPI answers TokenReviews and SubjectAccessReviews from maps and
// records the reviews it was asked.
type fakeAPI struct {
	mu      sync.Mutex
	users   map[string]authenticationv1.UserInfo // token -> user
	allowed map[string]bool                      // user name -> allowed
	fail    error                                // returned by every review when set
	tokens  []authenticationv1.TokenReviewSpec
	access  []authorizationv1.SubjectAccessReviewSpec
	aud     []string // the audiences of authenticated tokens
}

func (f *fakeAPI) client() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		f.tokens = append(f.tokens, tr.Spec)
		if f.fail != nil {
			return true, nil, f.fail
		}
		if u, ok := f.users[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: u, Audiences: f.aud}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		f.access = append(f.access, sar.Spec)
		if f.fail != nil {
			return true, nil, f.fail
		}
		sar.Status.Allowed = f.allowed[sar.Spec.User]
		if !sar.Status.Allowed {
			sar.Status.Reason = "no RBAC policy matched"
		}
		return true, sar, nil
	})
	return cs
}

// calls returns the number of reviews asked so far.
func (f *fakeAPI) calls() (tokens, access int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.tokens), len(f.access)
}

const (
	readerToken   = "reader-token-0123456789"
	strangerToken = "stranger-token-0123456789"
)

func newFakeAPI() *fakeAPI {
	return &fakeAPI{
		users: map[string]authenticationv1.UserInfo{
			readerToken: {Username: "system:serviceaccount:ops:reader", UID: "uid-1", Groups: []string{"system:serviceaccounts", "system:authenticated"},
				Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"backup-0"}}},
			strangerToken: {Username: "system:serviceaccount:ops:stranger"},
		},
		allowed: map[string]bool{"system:serviceaccount:ops:reader": true},
	}
}

func request(path, token string) *http.Request {
	r := httptest.NewRequest("GET", path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

func TestKubernetesOptions(t *testing.T) {
	cs := fake.NewClientset()
	tests := []struct {
		name string
		opts KubernetesOptions
	}{
		{"path and resource", KubernetesOptions{Path: "/x", Resource: &authorizationv1.ResourceAttributes{Resource: "backups"}}},
		{"resource without a resource", KubernetesOptions{Resource: &authorizationv1.ResourceAttributes{Group: "warmcache.io"}}},
		{"negative TTL", KubernetesOptions{DenyTTL: -time.Second}},
		{"negative cache size", KubernetesOptions{MaxCacheEntries: -1}},
	}
	for _, tt := range tests {
		if _, err := NewKubernetes(cs, tt.opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: NewKubernetes = %v, want ErrInvalidOptions", tt.name, err)
		}
	}
	if _, err := NewKubernetes(nil, KubernetesOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("nil client: %v, want ErrInvalidOptions", err)
	}
}

// TestKubernetesDecisions checks the answers for each kind of caller, what
// the reviews ask, and that no error holds a token.
func TestKubernetesDecisions(t *testing.T) {
	api := newFakeAPI()
	auth, err := NewKubernetes(api.client(), KubernetesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		token      string
		wantErr    error
		wantMsg    string
		wantCaller string
	}{
		{"anonymous", "", bolt.ErrUnauthenticated, "no bearer token", ""},
		{"invalid token", "not-a-token-0123456789", bolt.ErrUnauthenticated, "does not accept the bearer token: invalid bearer token", ""},
		{"unauthorized user", strangerToken, bolt.ErrForbidden, `user "system:serviceaccount:ops:stranger" may not get /debug/warmcache/backup: no RBAC policy matched`, ""},
		{"authorized user", readerToken, nil, "", "system:serviceaccount:ops:reader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caller, err := auth.Authorize(request("/debug/warmcache/backup", tt.token))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Authorize = %q, %v; want %v", caller, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q lacks %q", err, tt.wantMsg)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789") {
				t.Errorf("the error holds the token: %v", err)
			}
			if caller != tt.wantCaller {
				t.Errorf("caller %q, want %q", caller, tt.wantCaller)
			}
		})
	}
	// The reader's review carried its whole identity and asked for get on
	// the request's path.
	want := authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:ops:reader", UID: "uid-1", Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra:                 map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"backup-0"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/debug/warmcache/backup", Verb: "get"},
	}
	if got := api.access[len(api.access)-1]; !reflect.DeepEqual(got, want) {
		t.Errorf("SubjectAccessReview spec\n%+v\nwant\n%+v", got, want)
	}
	if tokens, access := api.calls(); tokens != 3 || access != 2 {
		t.Errorf("%d TokenReviews and %d SubjectAccessReviews, want 3 and 2 (none for an anonymous request)", tokens, access)
	}
}

// TestKubernetesCache checks that decisions are cached for their TTL, by
// token and path, and that a failed review is not cached.
func TestKubernetesCache(t *testing.T) {
	api := newFakeAPI()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	auth, err := NewKubernetes(api.client(), KubernetesOptions{AllowTTL: time.Minute, DenyTTL: 10 * time.Second, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(path, token string, wantErr error, wantTokens, wantAccess int) {
		t.Helper()
		if _, err := auth.Authorize(request(path, token)); !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) {
			t.Fatalf("Authorize(%s) = %v, want %v", path, err, wantErr)
		}
		if tokens, access := api.calls(); tokens != wantTokens || access != wantAccess {
			t.Fatalf("after Authorize(%s): %d TokenReviews, %d SubjectAccessReviews; want %d, %d", path, tokens, access, wantTokens, wantAccess)
		}
	}
	ask("/a", readerToken, nil, 1, 1)
	ask("/a", readerToken, nil, 1, 1) // cached
	ask("/b", readerToken, nil, 2, 2) // another path is another question
	ask("/a", strangerToken, bolt.ErrForbidden, 3, 3)
	ask("/a", strangerToken, bolt.ErrForbidden, 3, 3) // cached
	ask("/a", "bad-token-0123456789", bolt.ErrUnauthenticated, 4, 3)
	ask("/a", "bad-token-0123456789", bolt.ErrUnauthenticated, 4, 3) // cached

	clk.SetTime(clk.Now().Add(10 * time.Second)) // refusals expire, the allowed stays
	ask("/a", readerToken, nil, 4, 3)
	ask("/a", strangerToken, bolt.ErrForbidden, 5, 4)
	clk.SetTime(clk.Now().Add(50 * time.Second))
	ask("/a", readerToken, nil, 6, 5)

	// The user lost the permission: refused once the allowed decision
	// expired.
	api.mu.Lock()
	api.allowed = nil
	api.mu.Unlock()
	ask("/a", readerToken, nil, 6, 5)
	clk.SetTime(clk.Now().Add(time.Minute))
	ask("/a", readerToken, bolt.ErrForbidden, 7, 6)

	// A failed review is an error of neither kind, and not cached.
	api.mu.Lock()
	api.fail = errors.New("connection refused")
	api.mu.Unlock()
	for i := range 2 {
		_, err := auth.Authorize(request("/c", readerToken))
		if err == nil || errors.Is(err, bolt.ErrUnauthenticated) || errors.Is(err, bolt.ErrForbidden) || !strings.Contains(err.Error(), "TokenReview: connection refused") {
			t.Fatalf("Authorize with the apiserver failing = %v", err)
		}
		if tokens, _ := api.calls(); tokens != 8+i {
			t.Fatalf("failure %d: %d TokenReviews, want %d (failures are not cached)", i, tokens, 8+i)
		}
	}
}

// TestKubernetesResourceAndPath checks what the SubjectAccessReview asks
// with KubernetesOptions.Resource and Path.
func TestKubernetesResourceAndPath(t *testing.T) {
	res := &authorizationv1.ResourceAttributes{Namespace: "ops", Group: "warmcache.io", Resource: "backups", Name: "my-controller"}
	tests := []struct {
		name    string
		opts    KubernetesOptions
		want    authorizationv1.SubjectAccessReviewSpec
		wantMsg string
	}{
		{"resource", KubernetesOptions{Resource: res}, authorizationv1.SubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ops", Verb: "get", Group: "warmcache.io", Resource: "backups", Name: "my-controller"},
		}, "may not get backups.warmcache.io my-controller in namespace ops"},
		{"path", KubernetesOptions{Path: "/debug/warmcache/backup"}, authorizationv1.SubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/debug/warmcache/backup", Verb: "get"},
		}, "may not get /debug/warmcache/backup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI()
			auth, err := NewKubernetes(api.client(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = auth.Authorize(request("/stripped", strangerToken))
			if !errors.Is(err, bolt.ErrForbidden) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Authorize = %v, want ErrForbidden saying %q", err, tt.wantMsg)
			}
			got := api.access[0]
			got.User = ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SubjectAccessReview spec\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
	if res.Verb != "" {
		t.Errorf("NewKubernetes changed the caller's ResourceAttributes: verb %q", res.Verb)
	}
}

// TestKubernetesAudiences checks that a token for another audience is not
// authenticated.
func TestKubernetesAudiences(t *testing.T) {
	api := newFakeAPI()
	auth, err := NewKubernetes(api.client(), KubernetesOptions{Audiences: []string{"warmcache-backup"}})
	if err != nil {
		t.Fatal(err)
	}
	api.aud = []string{"https://kubernetes.default.svc"}
	if _, err := auth.Authorize(request("/a", readerToken)); !errors.Is(err, bolt.ErrUnauthenticated) || !strings.Contains(err.Error(), "not for audience") {
		t.Errorf("a token for another audience: %v", err)
	}
	if got := api.tokens[0].Audiences; !reflect.DeepEqual(got, []string{"warmcache-backup"}) {
		t.Errorf("TokenReview audiences %q", got)
	}
	api.aud = []string{"warmcache-backup"}
	if _, err := auth.Authorize(request("/b", readerToken)); err != nil {
		t.Errorf("a token for the audience: %v", err)
	}
}

// TestDecisionCacheBound checks that the cache never holds more than its
// bound, dropping expired entries first.
func TestDecisionCacheBound(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	c := newDecisionCache(clk, 2)
	c.put("old", decision{caller: "old"}, time.Second)
	c.put("a", decision{caller: "a"}, time.Minute)
	clk.SetTime(clk.Now().Add(2 * time.Second))
	c.put("b", decision{caller: "b"}, time.Minute) // drops the expired "old"
	if _, ok := c.get("a"); !ok || c.len() != 2 {
		t.Fatalf("after one eviction: a cached %v, %d entries", ok, c.len())
	}
	c.put("c", decision{caller: "c"}, time.Minute) // full of live entries: drops one
	if c.len() != 2 {
		t.Errorf("%d entries, want 2", c.len())
	}
	if d, ok := c.get("c"); !ok || d.caller != "c" {
		t.Errorf("the newest entry is not cached")
	}
	c.put("c", decision{caller: "c2"}, time.Minute) // replaces, evicts nothing
	if d, _ := c.get("c"); d.caller != "c2" || c.len() != 2 {
		t.Errorf("replace: %q, %d entries", d.caller, c.len())
	}
}
