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

// resolveCredential returns the credential of the flags, or nil when there
// is none to send: no token flag, and no kubeconfig or one whose user has
// no token (a client certificate cannot be forwarded).
func (o *backupOptions) resolveCredential() (*backupCredential, error) {
	switch {
	case o.Token != "":
		return &backupCredential{source: "--token", wrap: bearer(o.Token)}, nil
	case o.TokenFile != "":
		b, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("read --token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, usageErrorf("--token-file %s is empty", o.TokenFile)
		}
		return &backupCredential{source: "--token-file " + o.TokenFile, wrap: bearer(token)}, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	cfg, err := loader.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) && o.Kubeconfig == "" && o.Context == "" {
			return nil, nil // no kubeconfig: send nothing
		}
		return nil, withHint(fmt.Errorf("load the kubeconfig for its token: %w", err), "Pass --token-file (or --token) to send a token without a kubeconfig.")
	}
	source := "the in-cluster service account"
	if raw, err := loader.RawConfig(); err == nil && len(raw.Contexts) > 0 {
		name := raw.CurrentContext
		if o.Context != "" {
			name = o.Context
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
