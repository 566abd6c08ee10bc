package cli

import (
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
)

// recordedTimes matches the times a file records when it is written and
// its modification time, which differ at every generation of the fixture.
var recordedTimes = regexp.MustCompile(`((?:Modified|Created|Last write|Last relist):\s+|"(?:modified|created|lastWrite|lastRelist)": ")\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// transcript renders a run for a golden file: the command line, the exit
// code and both streams, with the fixture's directory replaced by $DIR and
// the times the file recorded by <time>.
func transcript(dir string, args []string, r result) []byte {
	clean := func(s string) string {
		s = strings.ReplaceAll(s, dir, "$DIR")
		return recordedTimes.ReplaceAllString(s, "${1}<time>")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "$ snapshot %s\nexit %d\n--- stdout\n%s--- stderr\n%s", clean(strings.Join(args, " ")), r.code, clean(r.stdout), clean(r.stderr))
	return []byte(b.String())
}

// TestGolden runs every command on the fixture and compares the whole
// transcript with testdata/<name>.golden (regenerate with -update).
func TestGolden(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	other := filepath.Join(filepath.Dir(path), "other.db")
	// other: pod 0 removed, pods 6 and 7 added, pod 2 changed.
	writeFixture(t, other, fixtureOptions{pods: 8, skipPods: map[int]bool{0: true}, mutatePods: func(p *corev1.Pod) {
		if p.Name == "app-2-00000002-x7k2p" {
			p.ResourceVersion = "1002"
			p.Labels["tier"] = "canary"
			p.Status.Phase = corev1.PodFailed
		}
	}})
	tests := []struct {
		name string
		args []string
	}{
		{"info", []string{"info", path}},
		{"info-json", []string{"info", path, "-o", "json"}},
		{"list-pods-all", []string{"list", path, "pods", "-A"}},
		{"list-pods-namespace", []string{"list", path, "po", "-n", "ns-001"}},
		{"list-pods-default-namespace", []string{"list", path, "pod"}},
		{"list-pods-wide", []string{"list", path, "pods", "-A", "-o", "wide"}},
		{"list-pods-no-headers", []string{"list", path, "pods", "-A", "--no-headers"}},
		{"list-pods-label-selector", []string{"list", path, "pods", "-A", "-l", "tier in (frontend,cache),app.kubernetes.io/name!=app-3"}},
		{"list-pods-field-selector", []string{"list", path, "pods", "-A", "--field-selector", "metadata.name=app-4-00000004-x7k2p"}},
		{"list-pods-node-selector", []string{"list", path, "pods", "-A", "--field-selector", "spec.nodeName=node-0002"}},
		{"list-pods-name", []string{"list", path, "pods", "-A", "-o", "name"}},
		{"list-pods-yaml", []string{"list", path, "pods", "-n", "ns-002", "-o", "yaml"}},
		{"list-deployments-json", []string{"list", path, "deploy", "-n", "ns-000", "-o", "json"}},
		{"list-deployments-all", []string{"list", path, "deployments.apps", "-A"}},
		{"list-widgets", []string{"list", path, "widgets.example.com", "-n", "lab"}},
		{"list-nodes", []string{"list", path, "no"}},
		{"list-nodes-all", []string{"list", path, "nodes", "-A"}},
		{"get-pod-yaml", []string{"get", path, "pods", "app-1-00000001-x7k2p", "-n", "ns-001", "-o", "yaml"}},
		{"get-deployment-json", []string{"get", path, "deployments.v1.apps", "web-0", "-n", "ns-000", "-o", "json"}},
		{"get-node-ignores-namespace", []string{"get", path, "node", "node-0001", "-n", "whatever", "-o", "name"}},
		{"get-widget", []string{"get", path, "widget", "gizmo-1", "-n", "lab"}},
		{"index-values", []string{"index", path, "pods", "namespace"}},
		{"index-value", []string{"index", path, "pods", "nodeName", "node-0003"}},
		{"index-counts", []string{"index", path, "pods", "namespace", "--counts"}},
		{"verify", []string{"verify", path}},
		{"export-pods", []string{"export", path, "pods", "-l", "tier=backend"}},
		{"export-widgets-json", []string{"export", path, "widgets.example.com", "-o", "json"}},
		{"export-pods-raw", []string{"export", path, "pods", "-n", "ns-000", "--raw", "--no-status"}},
		{"get-several-names", []string{"get", path, "pods", "app-0-00000000-x7k2p", "app-3-00000003-x7k2p", "-n", "ns-000", "-o", "name"}},
		{"get-type-name", []string{"get", path, "pod/app-1-00000001-x7k2p", "deployment.apps/web-1", "-n", "ns-001", "-o", "yaml"}},
		{"get-several-types-table", []string{"get", path, "pod/app-1-00000001-x7k2p", "deploy/web-1", "-n", "ns-001", "-o", "table"}},
		{"get-several-types-each-name", []string{"get", path, "pods,deploy", "app-1-00000001-x7k2p", "web-1", "-n", "ns-001", "-o", "name"}},
		{"get-not-found-among-found", []string{"get", path, "pods", "app-1-00000001-x7k2p", "nope", "-n", "ns-001", "-o", "name"}},
		{"get-ignore-not-found", []string{"get", path, "pods", "nope", "-n", "ns-001", "--ignore-not-found"}},
		{"get-jsonpath", []string{"get", path, "pods", "app-1-00000001-x7k2p", "-n", "ns-001", "-o", "jsonpath={.spec.nodeName} {.status.podIP}"}},
		{"get-managed-fields-hidden", []string{"get", path, "pods", "app-1-00000001-x7k2p", "-n", "ns-001", "-o", "jsonpath={.metadata.managedFields[*].manager}"}},
		{"get-show-managed-fields", []string{"get", path, "pods", "app-1-00000001-x7k2p", "-n", "ns-001", "-o", "jsonpath={.metadata.managedFields[*].manager}", "--show-managed-fields"}},
		{"list-several-types", []string{"list", path, "pods,deploy", "-n", "ns-001"}},
		{"list-several-types-name", []string{"list", path, "deploy,po", "-n", "ns-001", "-o", "name"}},
		{"list-several-types-json", []string{"list", path, "deploy,nodes", "-A", "-o", "json"}},
		{"list-jsonpath", []string{"list", path, "pods", "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}"}},
		{"list-custom-columns", []string{"list", path, "pods", "-A", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,IMAGES:.spec.containers[*].image,MISSING:.status.nope"}},
		{"list-custom-columns-no-headers", []string{"list", path, "deploy", "-A", "-o", "custom-columns=NAME:metadata.name,REPLICAS:{.spec.replicas}", "--no-headers"}},
		{"list-go-template", []string{"list", path, "nodes", "-o", "go-template={{range .items}}{{.metadata.name}} {{.metadata.resourceVersion}}{{\"\\n\"}}{{end}}"}},
		{"list-sort-by-name-desc-age", []string{"list", path, "deploy", "-A", "--sort-by", ".metadata.creationTimestamp"}},
		{"list-sort-by-number", []string{"list", path, "deploy", "-A", "--sort-by", "{.spec.replicas}", "-o", "name"}},
		{"list-show-labels", []string{"list", path, "deploy", "-A", "--show-labels"}},
		{"list-label-columns", []string{"list", path, "pods", "-A", "-L", "tier,app.kubernetes.io/name"}},
		{"list-show-kind", []string{"list", path, "nodes", "--show-kind"}},
		{"list-all-namespaces-wins", []string{"list", path, "deploy", "-n", "ns-000", "-A"}},
		{"diff", []string{"diff", path, other}},
		{"diff-show", []string{"diff", path, other, "pods", "--show"}},
		{"diff-same", []string{"diff", path, path, "pods", "--exit-code"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unchanged(t, path)
			unchanged(t, other)
			r := run(t, tt.args...)
			golden.Check(t, tt.name, transcript(filepath.Dir(path), tt.args, r))
		})
	}
}
