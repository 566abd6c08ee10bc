package cli

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
)

// backupCredential is what `snapshot backup` authenticates with: a bearer
// token from --token or --token-file, or the kubeconfig's credential. It
// never holds a value for printing: messages name its source only.
type backupCredential struct {
	// source names where the credential comes from, for messages:
	// "--token", "--token-file FILE", "kubeconfig context NAME".
	source string
	// wrap adds the credential (a token, a token file, an exec plugin) to
	// a transport.
	wrap func(http.RoundTripper) (http.RoundTripper, error)
}

// resolveCredential returns the credential of the source's flags, or nil when there
// is none to send: no token flag, and no kubeconfig or one whose user has
// no token (a client certificate cannot be forwarded).
func (s *backupSource) resolveCredential() (*backupCredential, error) {
	switch {
	case s.Token != "":
		return &backupCredential{source: s.flag("token"), wrap: bearer(s.Token)}, nil
	case s.TokenFile != "":
		b, err := os.ReadFile(s.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.flag("token-file"), err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, usageErrorf("%s %s is empty", s.flag("token-file"), s.TokenFile)
		}
		// The file is read again now and then, so that a long-running
		// serve --refresh follows a rotated token (a projected
		// service account token, for one).
		path := s.TokenFile
		return &backupCredential{source: s.flag("token-file") + " " + path, wrap: func(rt http.RoundTripper) (http.RoundTripper, error) {
			return transport.NewBearerAuthWithRefreshRoundTripper(token, path, rt)
		}}, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = s.Kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: s.Context})
	cfg, err := loader.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) && s.Kubeconfig == "" && s.Context == "" {
			return nil, nil // no kubeconfig: send nothing
		}
		return nil, withHint(fmt.Errorf("load the kubeconfig for its token: %w", err), "Pass %s (or %s) to send a token without a kubeconfig.", s.flag("token-file"), s.flag("token"))
	}
	source := "the in-cluster service account"
	if raw, err := loader.RawConfig(); err == nil && len(raw.Contexts) > 0 {
		name := raw.CurrentContext
		if s.Context != "" {
			name = s.Context
		}
		source = fmt.Sprintf("kubeconfig context %q", name)
	}
	// Only the user's token travels: not a username and password, not
	// impersonation, not the apiserver's address.
	auth := &rest.Config{
		Host:            cfg.Host, // an exec plugin may ask for the cluster's details
		TLSClientConfig: rest.TLSClientConfig{ServerName: cfg.ServerName, CAFile: cfg.CAFile, CAData: cfg.CAData},
		BearerToken:     cfg.BearerToken,
		BearerTokenFile: cfg.BearerTokenFile,
		ExecProvider:    cfg.ExecProvider,
		AuthProvider:    cfg.AuthProvider,
	}
	if auth.BearerToken == "" && auth.BearerTokenFile == "" && auth.ExecProvider == nil && auth.AuthProvider == nil {
		return nil, nil
	}
	return &backupCredential{source: source, wrap: func(rt http.RoundTripper) (http.RoundTripper, error) {
		return rest.HTTPWrappersForConfig(auth, rt)
	}}, nil
}

// bearer sends token on every request.
func bearer(token string) func(http.RoundTripper) (http.RoundTripper, error) {
	return func(rt http.RoundTripper) (http.RoundTripper, error) {
		return transport.NewBearerAuthRoundTripper(token, rt), nil
	}
}

// client returns the HTTP client that sends the credential, c nil sending
// none, based on base.
func (c *backupCredential) client(base *http.Client) (*http.Client, error) {
	if c == nil {
		return base, nil
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	wrapped, err := c.wrap(rt)
	if err != nil {
		return nil, fmt.Errorf("the credential of %s: %w", c.source, err)
	}
	cl := *base
	cl.Transport = wrapped
	return &cl, nil
}

// describe names the credential for messages.
func (c *backupCredential) describe() string {
	if c == nil {
		return "no token"
	}
	return "the token of " + c.source
}

// readableOnTheWire reports whether a credential sent to u could be read by
// others: plain HTTP to a host that is not loopback.
func readableOnTheWire(u *url.URL) bool {
	if u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
