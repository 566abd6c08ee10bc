package backupauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/warmcache/warmcache/store/bolt"
)

// KubernetesOptions configures NewKubernetes. The zero value checks get on
// the request's path as a non-resource URL, with the apiserver's audiences.
type KubernetesOptions struct {
	// Path is the non-resource URL the SubjectAccessReview asks about,
	// with verb get: the path an RBAC rule's nonResourceURLs must name.
	// Default: the request's URL path as the handler sees it; set Path
	// when the handler is mounted under http.StripPrefix, or to name one
	// path whatever the request's.
	Path string

	// Resource, when set, makes the SubjectAccessReview ask about this
	// resource instead of a non-resource URL: a namespaced Role can grant
	// it, where a non-resource URL needs a ClusterRole. For example
	// {Namespace: "ops", Group: "warmcache.io", Resource: "backups",
	// Name: "my-controller"}; the resource need not exist. Verb defaults
	// to "get". Path must be empty then. Default: nil.
	Resource *authorizationv1.ResourceAttributes

	// Audiences the token must be for (TokenReview's spec.audiences).
	// Default: none, which means the apiserver's own audiences: a token
	// that authenticates to the apiserver is accepted.
	Audiences []string

	// AllowTTL is how long an allowed token is allowed without asking
	// again. Default 1 minute.
	AllowTTL time.Duration

	// DenyTTL is how long a refused token (not valid, or its user not
	// allowed) is refused without asking again. Default 10 seconds.
	DenyTTL time.Duration

	// Timeout bounds each review request. Default 10 seconds.
	Timeout time.Duration

	// MaxCacheEntries bounds the number of cached decisions. Default
	// 1024.
	MaxCacheEntries int

	// Clock times the cached decisions. Default: the real clock.
	Clock clock.PassiveClock
}

func (o KubernetesOptions) withDefaults() (KubernetesOptions, error) {
	switch {
	case o.Resource != nil && o.Path != "":
		return o, fmt.Errorf("%w: both Path and Resource are set", ErrInvalidOptions)
	case o.Resource != nil && o.Resource.Resource == "":
		return o, fmt.Errorf("%w: Resource.Resource is empty", ErrInvalidOptions)
	case o.AllowTTL < 0 || o.DenyTTL < 0 || o.Timeout < 0 || o.MaxCacheEntries < 0:
		return o, fmt.Errorf("%w: negative AllowTTL, DenyTTL, Timeout or MaxCacheEntries", ErrInvalidOptions)
	}
	if o.Resource != nil {
		r := *o.Resource
		if r.Verb == "" {
			r.Verb = "get"
		}
		o.Resource = &r
	}
	o.Audiences = slices.Clone(o.Audiences)
	if o.AllowTTL == 0 {
		o.AllowTTL = time.Minute
	}
	if o.DenyTTL == 0 {
		o.DenyTTL = 10 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxCacheEntries == 0 {
		o.MaxCacheEntries = 1024
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o, nil
}

// Kubernetes is a bolt.Authorizer that checks the request's bearer token
// with the apiserver: a TokenReview authenticates it, then a
// SubjectAccessReview asks whether its user may get the path (or the
// Resource of KubernetesOptions). A request without a token, or with one
// the apiserver does not accept, is refused as not authenticated (401); a
// user the apiserver does not allow, as not authorized (403). Decisions are
// cached by a hash of the token, allowed ones for AllowTTL, refused ones
// for DenyTTL; a failed review is not cached. Safe for concurrent use.
//
// Its client's identity needs create on tokenreviews
// (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io);
// the package documentation has the RBAC rules.
type Kubernetes struct {
	client kubernetes.Interface
	opts   KubernetesOptions
	cache  *decisionCache
}

// NewKubernetes returns an authorizer that reviews tokens through client.
func NewKubernetes(client kubernetes.Interface, opts KubernetesOptions) (*Kubernetes, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidOptions)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Kubernetes{client: client, opts: opts, cache: newDecisionCache(opts.Clock, opts.MaxCacheEntries)}, nil
}

// Authorize implements bolt.Authorizer; the caller's name is the token's
// Kubernetes user name.
func (k *Kubernetes) Authorize(r *http.Request) (string, error) {
	token, ok := bearerToken(r)
	if !ok {
		return "", fmt.Errorf("backupauth: %w: no bearer token in the Authorization header", bolt.ErrUnauthenticated)
	}
	spec := k.accessSpec(r)
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:]) + "\x00" + describe(spec)
	if d, ok := k.cache.get(key); ok {
		return d.caller, d.err
	}
	caller, final, err := k.review(r.Context(), token, spec)
	if final {
		ttl := k.opts.AllowTTL
		if err != nil {
			ttl = k.opts.DenyTTL
		}
		k.cache.put(key, decision{caller: caller, err: err}, ttl)
	}
	return caller, err
}

// accessSpec returns what the SubjectAccessReview asks about r, without a
// user.
func (k *Kubernetes) accessSpec(r *http.Request) authorizationv1.SubjectAccessReviewSpec {
	if k.opts.Resource != nil {
		ra := *k.opts.Resource
		return authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &ra}
	}
	path := k.opts.Path
	if path == "" {
		path = r.URL.Path
	}
	return authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"}}
}

// describe names what spec asks about, as in an error message.
func describe(spec authorizationv1.SubjectAccessReviewSpec) string {
	if na := spec.NonResourceAttributes; na != nil {
		return na.Verb + " " + na.Path
	}
	ra := spec.ResourceAttributes
	s := ra.Verb + " " + ra.Resource
	if ra.Group != "" {
		s += "." + ra.Group
	}
	if ra.Subresource != "" {
		s += "/" + ra.Subresource
	}
	if ra.Name != "" {
		s += " " + ra.Name
	}
	if ra.Namespace != "" {
		s += " in namespace " + ra.Namespace
	}
	return s
}

// review asks the apiserver about token. final reports a decision (allowed,
// or refused with ErrUnauthenticated or ErrForbidden) rather than a failed
// request. The SubjectAccessReview's evaluation error, which may describe
// the cluster's policy, is not passed on to the caller.
func (k *Kubernetes) review(ctx context.Context, token string, spec authorizationv1.SubjectAccessReviewSpec) (caller string, final bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, k.opts.Timeout)
	defer cancel()
	tr, err := k.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: k.opts.Audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", false, fmt.Errorf("backupauth: TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		msg := "the apiserver does not accept the bearer token"
		if tr.Status.Error != "" {
			msg += ": " + tr.Status.Error
		}
		return "", true, fmt.Errorf("backupauth: %w: %s", bolt.ErrUnauthenticated, msg)
	}
	if len(k.opts.Audiences) > 0 && !slices.ContainsFunc(tr.Status.Audiences, func(a string) bool { return slices.Contains(k.opts.Audiences, a) }) {
		return "", true, fmt.Errorf("backupauth: %w: the bearer token is not for audience %q", bolt.ErrUnauthenticated, k.opts.Audiences)
	}
	user := tr.Status.User
	spec.User, spec.UID, spec.Groups = user.Username, user.UID, user.Groups
	if len(user.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for key, v := range user.Extra {
			spec.Extra[key] = authorizationv1.ExtraValue(v)
		}
	}
	sar, err := k.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return "", false, fmt.Errorf("backupauth: SubjectAccessReview for user %q: %w", user.Username, err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		msg := fmt.Sprintf("user %q may not %s", user.Username, describe(spec))
		if sar.Status.Reason != "" {
			msg += ": " + sar.Status.Reason
		}
		return "", true, fmt.Errorf("backupauth: %w: %s", bolt.ErrForbidden, msg)
	}
	return user.Username, true, nil
}
