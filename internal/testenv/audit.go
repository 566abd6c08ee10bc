package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// The apiserver writes an audit log of its LIST and WATCH requests, read by
// Requests: unlike /metrics, the log says which namespace and which client
// a request came from, so tests sharing one apiserver can count their own.
//
// Each request is recorded at its RequestReceived stage only, written by the
// log backend in blocking mode: the apiserver writes the line before it
// handles the request, so once a client has its response the line is in
// the file.
const (
	auditPolicyFile = "audit-policy.yaml"
	auditLogFile    = "audit.log"
	auditPolicy     = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["ResponseStarted", "ResponseComplete", "Panic"]
rules:
- level: Metadata
  verbs: ["list", "watch"]
- level: None
`
)

// auditArgs returns the apiserver flags for the audit log in dir.
func auditArgs(dir string) []string {
	return []string{
		"--audit-policy-file=" + filepath.Join(dir, auditPolicyFile),
		"--audit-log-path=" + filepath.Join(dir, auditLogFile),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=100000", // megabytes: never rotated under a reader
	}
}

// writeAuditPolicy writes the audit policy into dir.
func writeAuditPolicy(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, auditPolicyFile), []byte(auditPolicy), 0o600); err != nil {
		return fmt.Errorf("write audit policy: %w", err)
	}
	return nil
}

// RequestFilter selects requests for Requests. Empty fields match every
// request.
type RequestFilter struct {
	// Verb is "list" or "watch" (the only verbs recorded); "watchlist"
	// selects WATCH requests that stream the initial list
	// (sendInitialEvents=true, a WatchList), "watch" every WATCH.
	Verb string
	// Resource is the plural, lower-case resource, e.g. "pods".
	Resource string
	// Namespace is the request's namespace; requests across all
	// namespaces have none, and are not selected when Namespace is set.
	Namespace string
	// UserAgent is the client's User-Agent header, matched exactly.
	UserAgent string
}

// auditEvent is the part of an audit.k8s.io/v1 Event that Requests reads.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
}

// Requests returns how many LIST or WATCH requests matching f the
// apiserver has received since Start, from its audit log: unlike
// ListRequests, it can count one namespace's or one client's requests, so
// tests sharing an environment count only their own. Every request the
// apiserver has received before Requests is called is counted (the log is
// written before a request is handled), restarts included.
func (e *Env) Requests(ctx context.Context, f RequestFilter) (int, error) {
	if _, _, err := e.processes(); err != nil {
		return 0, fmt.Errorf("count requests: %w", err)
	}
	verb, watchList := f.Verb, false
	if verb == "watchlist" {
		verb, watchList = "watch", true
	}
	path := filepath.Join(e.dir, auditLogFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("%w: count requests: %w", ErrMetrics, err)
	}
	// The apiserver may be writing a line: every line before the last
	// newline is whole.
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	n := 0
	for line := range bytes.Lines(data) {
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return 0, fmt.Errorf("%w: %s: %w", ErrMetrics, path, err)
		}
		if ev.Stage != "RequestReceived" || ev.ObjectRef == nil || ev.ObjectRef.Subresource != "" {
			continue
		}
		if verb != "" && ev.Verb != verb ||
			f.Resource != "" && ev.ObjectRef.Resource != f.Resource ||
			f.Namespace != "" && ev.ObjectRef.Namespace != f.Namespace ||
			f.UserAgent != "" && ev.UserAgent != f.UserAgent {
			continue
		}
		if watchList && !sendsInitialEvents(ev.RequestURI) {
			continue
		}
		n++
	}
	return n, nil
}

// sendsInitialEvents reports whether a request URI asks for a WatchList.
func sendsInitialEvents(uri string) bool {
	_, query, _ := strings.Cut(uri, "?")
	q, err := url.ParseQuery(query)
	return err == nil && q.Get("sendInitialEvents") == "true"
}
