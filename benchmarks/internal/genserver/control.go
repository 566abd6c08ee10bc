package genserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// ControlPrefix is the path of the control API, of this package's server
// and of apiproc's; Control calls it.
const ControlPrefix = "/bench/"

// controlPrefix is ControlPrefix, as the server's code spells it.
const controlPrefix = ControlPrefix

func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var out interface{} = struct{}{}
	switch op := strings.TrimPrefix(r.URL.Path, controlPrefix); op {
	case "churn":
		n, err1 := strconv.Atoi(q.Get("changes"))
		gen, err2 := strconv.ParseUint(q.Get("gen"), 10, 32)
		hot, err3 := OptionalInt(q.Get("hot"))
		if err1 != nil || err2 != nil || err3 != nil {
			http.Error(w, "changes, gen and hot must be numbers", http.StatusBadRequest)
			return
		}
		res, err := s.Churn(q.Get("resource"), n, uint32(gen), hot)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out = res
	case "hold":
		s.Hold()
	case "open":
		s.Open()
	case "restart":
		s.Restart()
	case "stats":
		out = s.Stats()
	default:
		http.Error(w, "unknown control operation "+op, http.StatusNotFound)
		return
	}
	b, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// writeStatus answers with err's metav1.Status in JSON.
func writeStatus(w http.ResponseWriter, _ *http.Request, err error) {
	st := apierrors.NewInternalError(err).Status()
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s.Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	b, e := runtime.Encode(info.Serializer, &st)
	if e != nil {
		http.Error(w, st.Message, int(st.Code))
		return
	}
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(b)
}

// Client drives a Server's control API from another process.
type Client struct {
	// URL is the server's base URL.
	URL  string
	HTTP *http.Client
}

// Config returns a client configuration for the server at url, with
// client-side rate limiting off.
func Config(url string) *rest.Config { return &rest.Config{Host: url, QPS: -1} }

// Churn calls Server.Churn.
func (c *Client) Churn(ctx context.Context, resource string, n int, gen uint32, hot int) (ChurnResult, error) {
	var res ChurnResult
	q := url.Values{"resource": {resource}, "changes": {strconv.Itoa(n)}, "gen": {strconv.FormatUint(uint64(gen), 10)}}
	if hot != 0 {
		q.Set("hot", strconv.Itoa(hot))
	}
	err := c.call(ctx, "churn", q, &res)
	return res, err
}

// OptionalInt parses an optional integer query parameter: "" is 0.
func OptionalInt(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	return strconv.Atoi(v)
}

// Hold calls Server.Hold.
func (c *Client) Hold(ctx context.Context) error { return c.call(ctx, "hold", nil, nil) }

// Open calls Server.Open.
func (c *Client) Open(ctx context.Context) error { return c.call(ctx, "open", nil, nil) }

// Restart calls Server.Restart.
func (c *Client) Restart(ctx context.Context) error { return c.call(ctx, "restart", nil, nil) }

// Stats calls Server.Stats.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := c.call(ctx, "stats", nil, &st)
	return st, err
}

func (c *Client) call(ctx context.Context, op string, q url.Values, out interface{}) error {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if err := Control(ctx, hc, c.URL, op, q, out); err != nil {
		return fmt.Errorf("%w: %w", ErrControl, err)
	}
	return nil
}

// Control posts the control request op with query q to the server at
// base (its URL, a trailing slash allowed) through hc, and decodes the
// JSON answer into out unless out is nil. Its errors name op; a status
// other than 200 OK is an error that carries the answer's body.
func Control(ctx context.Context, hc *http.Client, base, op string, q url.Values, out interface{}) error {
	u := strings.TrimSuffix(base, "/") + ControlPrefix + op
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", op, resp.Status, strings.TrimSpace(string(body)))
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}
