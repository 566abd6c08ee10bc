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
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
	"github.com/warmcache/warmcache/store/bolt"
)

// backupOptions is `snapshot backup URL --output OUT`.
type backupOptions struct {
	env    *Env
	common *commonOptions

	URL            string
	Output         string
	Force          bool
	RequestTimeout time.Duration

	StallTimeout time.Duration

	Token               string
	TokenFile           string
	Kubeconfig          string
	Context             string
	UnsafeTokenOverHTTP bool

	CertificateAuthority string

	url *url.URL
}

func newBackupCommand(env *Env, common *commonOptions) *cobra.Command {
	o := &backupOptions{env: env, common: common}
	cmd := &cobra.Command{
		Use:   "backup URL --output OUT",
		Short: "Fetch a consistent copy of the cache of a running process",
		Long: `Fetch a consistent hot backup of a cache file from the process that holds it open, over
HTTP: the process serves bolt.DB.BackupHandler at URL (the copy holds every cached object,
Secrets included).

The request carries a bearer token, for the endpoint's authorizer (package backupauth):
--token-file's, else --token's, else the credential of the kubeconfig's user (--kubeconfig,
$KUBECONFIG or ~/.kube/config, --context; a token, a token file or an exec plugin), or the
in-cluster service account's. The token is never printed. It is not sent over plain http://
to a host other than loopback, where anyone on the path could read it: use https://, or
kubectl port-forward and http://127.0.0.1 (--unsafe-token-over-http sends it anyway).

The copy is streamed to a temporary file beside OUT, flushed to disk, checked (complete
length, opens as a warmcache file, passes the bbolt structure check), and only then
moved to OUT. OUT must not exist unless --force is given. A download that receives
nothing for --stall-timeout is abandoned. Inspect the copy with the other commands.`,
		Example: `  kubectl port-forward pod/my-controller-0 8443 &
  snapshot backup https://localhost:8443/debug/warmcache/backup --output cache.db --certificate-authority ca.crt
  snapshot backup http://localhost:8080/debug/warmcache/backup --output cache.db --token-file token
  snapshot info cache.db`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              runE(o),
	}
	cmd.Flags().StringVar(&o.Output, "output", "", "the file to write (required)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "replace OUT if it exists")
	cmd.Flags().DurationVar(&o.RequestTimeout, "request-timeout", 0, "give up when the whole download takes longer (default: no limit)")
	cmd.Flags().DurationVar(&o.StallTimeout, "stall-timeout", time.Minute, "give up when nothing is received for this long")
	cmd.Flags().StringVar(&o.TokenFile, "token-file", "", "send the bearer token in this file")
	cmd.Flags().StringVar(&o.Token, "token", "", "send this bearer token (visible to other users in the process list: prefer --token-file)")
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "the kubeconfig whose user's token is sent without --token or --token-file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&o.Context, "context", "", "the kubeconfig context whose user's token is sent (default: the current context)")
	cmd.Flags().StringVar(&o.CertificateAuthority, "certificate-authority", "", "verify an https:// endpoint's certificate with the CA certificates (PEM) in this file instead of the system's")
	cmd.Flags().BoolVar(&o.UnsafeTokenOverHTTP, "unsafe-token-over-http", false, "send the token over plain http:// to a host other than loopback, where it can be read on the way")
	return cmd
}

func (o *backupOptions) Complete(_ *cobra.Command, args []string) error {
	o.URL = args[0]
	return nil
}

func (o *backupOptions) Validate() error {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("URL %q is not an http:// or https:// URL", o.URL)
	}
	o.url = u
	if o.Output == "" {
		return usageErrorf("--output is required: the file to write")
	}
	if o.RequestTimeout < 0 {
		return usageErrorf("--request-timeout must not be negative")
	}
	if o.StallTimeout <= 0 {
		return usageErrorf("--stall-timeout must be positive")
	}
	if o.Token != "" && o.TokenFile != "" {
		return usageErrorf("--token and --token-file are exclusive: give one")
	}
	return nil
}

func (o *backupOptions) Run(ctx context.Context) (err error) {
	if err := checkOutputPath(o.Output, "", o.Force); err != nil {
		return err
	}
	cred, err := o.resolveCredential()
	if err != nil {
		return err
	}
	if cred != nil && readableOnTheWire(o.url) && !o.UnsafeTokenOverHTTP {
		return withHint(usageErrorf("not sending %s over plain HTTP to %s: anyone on the way could read it", cred.describe(), o.url.Host),
			"Use an https:// URL, or kubectl port-forward and http://127.0.0.1:PORT; --unsafe-token-over-http sends it anyway.")
	}
	base, err := o.trusting(o.env.HTTPClient)
	if err != nil {
		return err
	}
	if base != o.env.HTTPClient {
		defer base.CloseIdleConnections()
	}
	client, err := cred.client(base)
	if err != nil {
		return err
	}
	if o.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.RequestTimeout)
		defer cancel()
	}
	// A server that stops sending must not hang the command.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(o.StallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url.String(), nil)
	if err != nil {
		return usageErrorf("URL %q: %v", o.URL, err)
	}
	defer o.env.HTTPClient.CloseIdleConnections()
	resp, err := client.Do(req)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errStalled) {
		err = fmt.Errorf("%w: nothing received for %v", cause, o.StallTimeout)
	}
	if err != nil {
		return withHint(fmt.Errorf("fetch %s: %w", o.URL, err), "Is the process running and serving bolt.DB.BackupHandler at that URL?")
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		err := fmt.Errorf("fetch %s: HTTP %s: %s", o.URL, resp.Status, strings.TrimSpace(string(body)))
		switch resp.StatusCode {
		case http.StatusNotFound:
			err = fmt.Errorf("%w: %w", ErrNotFound, err)
		case http.StatusUnauthorized:
			return withHint(err, "%s", unauthorizedHint(cred))
		case http.StatusForbidden:
			return withHint(err, "The endpoint knows the user of %s, but that user may not read the backup: grant it get on the endpoint's path "+
				"(an RBAC ClusterRole with nonResourceURLs: [%q] and verbs: [get], bound to the user) or on the resource the endpoint checks, or use another token.",
				cred.describe(), o.url.Path)
		}
		return withHint(err, "The URL must be where the process serves bolt.DB.BackupHandler.")
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.Output), "."+filepath.Base(o.Output)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create a temporary file beside %s: %w", o.Output, err)
	}
	defer func() {
		_ = tmp.Close()
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	bar := o.env.progressBar("backup", resp.ContentLength, true)
	defer bar.Finish()
	n, err := io.Copy(tmp, &progressReader{r: resp.Body, bar: bar, read: func() { stall.Reset(o.StallTimeout) }})
	if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
		err = fmt.Errorf("%w: nothing received for %v", cause, o.StallTimeout)
	}
	if (err == nil || errors.Is(err, io.ErrUnexpectedEOF)) && resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("download %s: received %d of %d bytes (the connection ended early; did the process stop?)", o.URL, n, resp.ContentLength)
	}
	if err != nil {
		return fmt.Errorf("download %s: %w", o.URL, err)
	}
	bar.Finish()
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("flush the copy for %s: %w", o.Output, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close the copy for %s: %w", o.Output, err)
	}
	if err := checkCopy(ctx, o.env, o.common, tmp.Name(), nil); err != nil {
		if errors.Is(err, bolt.ErrCorrupt) {
			// The temporary file is gone and the advice on a
			// damaged cache file does not apply: say what was
			// received, without either.
			detail := strings.ReplaceAll(err.Error(), tmp.Name(), "the received copy")
			return withHint(mark(bolt.ErrCorrupt, "the backup received from %s is not a valid warmcache file (nothing was written to %s): %s", o.URL, o.Output, detail),
				"Check that the URL serves bolt.DB.BackupHandler, then retry.")
		}
		return err
	}
	if err := installFile(tmp.Name(), o.Output, o.Force); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.env.Stdout, "backed up %s to %s (%s)\n", o.URL, o.Output, progress.Size(n))
	return err
}

// trusting returns base, or with --certificate-authority a copy of it whose
// transport trusts that file's certificates only.
func (o *backupOptions) trusting(base *http.Client) (*http.Client, error) {
	if o.CertificateAuthority == "" {
		return base, nil
	}
	pem, err := os.ReadFile(o.CertificateAuthority)
	if err != nil {
		return nil, fmt.Errorf("read --certificate-authority: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usageErrorf("--certificate-authority %s holds no PEM certificate", o.CertificateAuthority)
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr, ok := rt.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("--certificate-authority: the HTTP client's transport is a %T, not an *http.Transport", rt)
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
func unauthorizedHint(cred *backupCredential) string {
	if cred == nil {
		return "The endpoint requires a bearer token, and none was sent: pass --token-file (or --token), or use a kubeconfig whose user has a token (--kubeconfig, --context)."
	}
	return fmt.Sprintf("The endpoint did not accept %s: it may have expired, or be for another cluster or audience, or not be the endpoint's static token.", cred.describe())
}

// errStalled is the cause of a download abandoned because the server
// stopped sending.
var errStalled = errors.New("the server stopped sending")

// progressReader advances a progress bar by the bytes read and calls read
// after every read that returned data.
type progressReader struct {
	r    io.Reader
	bar  *progress.Bar
	read func()
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.bar.Add(int64(n))
		p.read()
	}
	return n, err
}
