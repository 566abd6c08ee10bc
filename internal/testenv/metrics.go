package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxMetricsBytes bounds the /metrics body read.
const maxMetricsBytes = 64 << 20

// Metrics returns the apiserver's /metrics page in the Prometheus text
// format. Counters restart from zero when the apiserver restarts.
func (e *Env) Metrics(ctx context.Context) (string, error) {
	if _, _, err := e.processes(); err != nil {
		return "", fmt.Errorf("read metrics: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.config.Host+"/metrics", nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrMetrics, err)
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := e.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: GET /metrics: %w", ErrMetrics, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes))
	if err != nil {
		return "", fmt.Errorf("%w: read /metrics: %w", ErrMetrics, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: GET /metrics: %s", ErrMetrics, resp.Status)
	}
	return string(body), nil
}

// MetricSum returns the sum of the values of every sample of the metric
// name whose labels include all of match (a nil match sums every sample).
// A metric with no matching sample sums to 0.
func (e *Env) MetricSum(ctx context.Context, name string, match map[string]string) (float64, error) {
	text, err := e.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	sum, err := sumSamples(text, name, match)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrMetrics, name, err)
	}
	return sum, nil
}

// ListRequests returns how many LIST requests the apiserver has served for
// resource (plural, lower case, e.g. "configmaps") since it started:
// apiserver_request_total{verb="LIST",resource=resource} summed over every
// other label. WATCH requests, including WatchList streams
// (sendInitialEvents=true), are counted under verb WATCH and not here.
func (e *Env) ListRequests(ctx context.Context, resource string) (float64, error) {
	return e.MetricSum(ctx, "apiserver_request_total", map[string]string{"verb": "LIST", "resource": resource})
}

// errSyntax reports a malformed line of the text exposition format.
var errSyntax = errors.New("malformed metrics line")

// sample is one parsed line of the Prometheus text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// sumSamples sums the samples of name matching match in text.
func sumSamples(text, name string, match map[string]string) (float64, error) {
	var sum float64
	for i, line := range strings.Split(text, "\n") {
		// Cheap filter before parsing: only lines of this metric.
		if !strings.HasPrefix(line, name) || len(line) == len(name) || (line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return 0, fmt.Errorf("line %d: %w", i+1, err)
		}
		if matches(s.labels, match) {
			sum += s.value
		}
	}
	return sum, nil
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// parseSample parses `name{l="v",...} value [timestamp]` or `name value
// [timestamp]`. Label values may contain the escapes \\, \" and \n.
func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("%w: no metric name in %q", errSyntax, line)
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		rest, err := parseLabels(line[1:], s.labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) != 1 && len(fields) != 2 {
		return s, fmt.Errorf("%w: want a value and an optional timestamp after %s, got %q", errSyntax, s.name, line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("%w: value of %s: %w", errSyntax, s.name, err)
	}
	s.value = v
	return s, nil
}

// parseLabels parses `l="v",...}` into labels and returns what follows the
// closing brace.
func parseLabels(line string, labels map[string]string) (string, error) {
	for {
		line = strings.TrimLeft(line, " ")
		if strings.HasPrefix(line, "}") {
			return line[1:], nil
		}
		eq := strings.IndexByte(line, '=')
		if eq < 0 {
			return "", fmt.Errorf("%w: bad label in %q", errSyntax, line)
		}
		key, quoted := strings.TrimSpace(line[:eq]), strings.TrimLeft(line[eq+1:], " ")
		if key == "" || !strings.HasPrefix(quoted, `"`) {
			return "", fmt.Errorf("%w: bad label in %q", errSyntax, line)
		}
		val, rest, err := parseQuoted(quoted[1:])
		if err != nil {
			return "", err
		}
		labels[key] = val
		line = strings.TrimLeft(rest, " ")
		switch {
		case strings.HasPrefix(line, ","):
			line = line[1:]
		case strings.HasPrefix(line, "}"):
		default:
			return "", fmt.Errorf("%w: want , or } after label %s", errSyntax, key)
		}
	}
}

// parseQuoted reads an escaped label value up to its closing quote and
// returns it and the text after the quote.
func parseQuoted(s string) (string, string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("%w: unterminated escape", errSyntax)
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case '\\', '"':
				b.WriteByte(s[i])
			default:
				return "", "", fmt.Errorf("%w: unknown escape \\%c", errSyntax, s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("%w: unterminated label value", errSyntax)
}
