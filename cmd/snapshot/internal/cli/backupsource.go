package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
	"github.com/warmcache/warmcache/store/bolt"
)

// backupSource is a running process's backup endpoint (bolt.DB.BackupHandler)
// and how to reach it: the URL, the credential to send, the trusted CAs and
// the timeouts. `snapshot backup` and `snapshot serve URL` fetch through it,
// so that both authenticate, check and explain failures the same way.
type backupSource struct {
	// prefix is put before the names of the flags (but
	// --unsafe-token-over-http), where they would collide with a
	// command's own: "" for backup, "backup-" for serve.
	prefix string

	URL            string
	RequestTimeout time.Duration
	StallTimeout   time.Duration

	Token               string
	TokenFile           string
	Kubeconfig          string
	Context             string
	UnsafeTokenOverHTTP bool

	CertificateAuthority string

	url *url.URL
}

// addFlags adds the flags of the source to fl.
func (s *backupSource) addFlags(fl *pflag.FlagSet) {
	p := s.prefix
	fl.DurationVar(&s.RequestTimeout, p+"request-timeout", 0, "give up when the whole download takes longer (default: no limit)")
	fl.DurationVar(&s.StallTimeout, p+"stall-timeout", time.Minute, "give up when nothing is received for this long")
	fl.StringVar(&s.TokenFile, p+"token-file", "", "send the bearer token in this file")
	fl.StringVar(&s.Token, p+"token", "", "send this bearer token (visible to other users in the process list: prefer "+s.flag("token-file")+")")
	fl.StringVar(&s.Kubeconfig, p+"kubeconfig", "", "the kubeconfig whose user's token is sent without "+s.flag("token")+" or "+s.flag("token-file")+" (default: $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&s.Context, p+"context", "", "the kubeconfig context whose user's token is sent (default: the current context)")
	fl.StringVar(&s.CertificateAuthority, p+"certificate-authority", "", "verify an https:// endpoint's certificate with the CA certificates (PEM) in this file instead of the system's")
	fl.BoolVar(&s.UnsafeTokenOverHTTP, "unsafe-token-over-http", false, "send the token over plain http:// to a host other than loopback, where it can be read on the way")
}

// flag is the command-line name of the source's flag name.
func (s *backupSource) flag(name string) string { return "--" + s.prefix + name }

// isURL reports whether arg is meant as a URL rather than a file's path.
func isURL(arg string) bool {
	return strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://")
}

// validate checks the URL and the flags.
func (s *backupSource) validate() error {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("URL %q is not an http:// or https:// URL", s.URL)
	}
	s.url = u
	if s.RequestTimeout < 0 {
		return usageErrorf("%s must not be negative", s.flag("request-timeout"))
	}
	if s.StallTimeout <= 0 {
		return usageErrorf("%s must be positive", s.flag("stall-timeout"))
	}
	if s.Token != "" && s.TokenFile != "" {
		return usageErrorf("%s and %s are exclusive: give one", s.flag("token"), s.flag("token-file"))
	}
	return nil
}

// backupClient fetches copies from a backupSource with its credential.
type backupClient struct {
	src    *backupSource
	env    *Env
	cred   *backupCredential
	client *http.Client
	// base is the client without the credential, whose idle connections
	// Close closes.
	base *http.Client
}

// connect resolves the credential, refuses to send it where others could
// read it, and returns the client that fetches. Close it when done.
func (s *backupSource) connect(env *Env) (*backupClient, error) {
	cred, err := s.resolveCredential()
	if err != nil {
		return nil, err
	}
	if cred != nil && readableOnTheWire(s.url) && !s.UnsafeTokenOverHTTP {
		return nil, withHint(usageErrorf("not sending %s over plain HTTP to %s: anyone on the way could read it", cred.describe(), s.url.Host),
			"Use an https:// URL, or kubectl port-forward and http://127.0.0.1:PORT; --unsafe-token-over-http sends it anyway.")
	}
	base, err := s.trusting(env.HTTPClient)
	if err != nil {
		return nil, err
	}
	client, err := cred.client(base)
	if err != nil {
		return nil, err
	}
	return &backupClient{src: s, env: env, cred: cred, client: client, base: base}, nil
}

// Close closes the idle connections of the fetches.
func (c *backupClient) Close() { c.base.CloseIdleConnections() }

// fetch downloads one copy into dst, flushes and closes it, and checks it
// (complete length, opens as a warmcache file, passes the bbolt structure
// check); it returns the copy's size. unused, when not "", says what
// follows from a copy that fails its check ("nothing was written to OUT"). With bar, a
// progress bar is drawn on a terminal. dst is closed whatever happens;
// removing it is the caller's.
func (c *backupClient) fetch(ctx context.Context, common *commonOptions, dst *os.File, unused string, bar bool) (n int64, err error) {
	defer func() { _ = dst.Close() }()
	src := c.src
	if src.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, src.RequestTimeout)
		defer cancel()
	}
	// A server that stops sending must not hang the command.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(src.StallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.url.String(), nil)
	if err != nil {
		return 0, usageErrorf("URL %q: %v", src.URL, err)
	}
	resp, err := c.client.Do(req)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errStalled) {
		err = fmt.Errorf("%w: nothing received for %v", cause, src.StallTimeout)
	}
	if err != nil {
		return 0, withHint(fmt.Errorf("fetch %s: %w", src.URL, err), "Is the process running and serving bolt.DB.BackupHandler at that URL?")
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, c.statusError(resp)
	}
	var b *progress.Bar // nil draws nothing
	if bar {
		b = c.env.progressBar("backup", resp.ContentLength, true)
	}
	defer b.Finish()
	n, err = io.Copy(dst, &progressReader{r: resp.Body, add: b.Add, read: func() { stall.Reset(src.StallTimeout) }})
	if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
		err = fmt.Errorf("%w: nothing received for %v", cause, src.StallTimeout)
	}
	if (err == nil || errors.Is(err, io.ErrUnexpectedEOF)) && resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("download %s: received %d of %d bytes (the connection ended early; did the process stop?)", src.URL, n, resp.ContentLength)
	}
	if err != nil {
		return n, fmt.Errorf("download %s: %w", src.URL, err)
	}
	b.Finish()
	if err := dst.Sync(); err != nil {
		return n, fmt.Errorf("flush the copy of %s: %w", src.URL, err)
	}
	if err := dst.Close(); err != nil {
		return n, fmt.Errorf("close the copy of %s: %w", src.URL, err)
	}
	if err := checkCopy(ctx, c.env, common, dst.Name(), nil); err != nil {
		if errors.Is(err, bolt.ErrCorrupt) {
			// The temporary file is gone and the advice on a
			// damaged cache file does not apply: say what was
			// received, without either.
			detail := strings.ReplaceAll(err.Error(), dst.Name(), "the received copy")
			if unused != "" {
				unused = " (" + unused + ")"
			}
			return n, withHint(mark(bolt.ErrCorrupt, "the backup received from %s is not a valid warmcache file%s: %s", src.URL, unused, detail),
				"Check that the URL serves bolt.DB.BackupHandler, then retry.")
		}
		return n, err
	}
	return n, nil
}

// statusError explains a response other than 200 OK.
func (c *backupClient) statusError(resp *http.Response) error {
	src := c.src
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	err := fmt.Errorf("fetch %s: HTTP %s: %s", src.URL, resp.Status, strings.TrimSpace(string(body)))
	switch resp.StatusCode {
	case http.StatusNotFound:
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	case http.StatusUnauthorized:
		return withHint(err, "%s", src.unauthorizedHint(c.cred))
	case http.StatusForbidden:
		return withHint(err, "The endpoint knows the user of %s, but that user may not read the backup: grant it get on the endpoint's path "+
			"(an RBAC ClusterRole with nonResourceURLs: [%q] and verbs: [get], bound to the user) or on the resource the endpoint checks, or use another token.",
			c.cred.describe(), src.url.Path)
	}
	return withHint(err, "The URL must be where the process serves bolt.DB.BackupHandler.")
}

// trusting returns base, or with --certificate-authority a copy of it whose
// transport trusts that file's certificates only.
func (s *backupSource) trusting(base *http.Client) (*http.Client, error) {
	if s.CertificateAuthority == "" {
		return base, nil
	}
	flag := s.flag("certificate-authority")
	pem, err := os.ReadFile(s.CertificateAuthority)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", flag, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usageErrorf("%s %s holds no PEM certificate", flag, s.CertificateAuthority)
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr, ok := rt.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("%s: the HTTP client's transport is a %T, not an *http.Transport", flag, rt)
	}
	tr = tr.Clone()
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.RootCAs = pool
	c := *base
	c.Transport = tr
	return &c, nil
}

// unauthorizedHint is the advice on a 401 for the credential sent.
func (s *backupSource) unauthorizedHint(cred *backupCredential) string {
	if cred == nil {
		return fmt.Sprintf("The endpoint requires a bearer token, and none was sent: pass %s (or %s), or use a kubeconfig whose user has a token (%s, %s).",
			s.flag("token-file"), s.flag("token"), s.flag("kubeconfig"), s.flag("context"))
	}
	return fmt.Sprintf("The endpoint did not accept %s: it may have expired, or be for another cluster or audience, or not be the endpoint's static token.", cred.describe())
}

// errStalled is the cause of a download abandoned because the server
// stopped sending.
var errStalled = errors.New("the server stopped sending")

// progressReader calls add with the bytes read, and read after every read
// that returned data.
type progressReader struct {
	r    io.Reader
	add  func(int64)
	read func()
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.add(int64(n))
		p.read()
	}
	return n, err
}
