package cli

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// shortName is a short name kubectl accepts for a built-in resource.
type shortName struct{ resource, group string }

// shortNames are the short names the API server advertises for built-in
// resources (kubectl api-resources). Custom resources' short names are not
// recorded in the file; their plural and singular names work.
var shortNames = map[string][]shortName{
	"cm":     {{"configmaps", ""}},
	"cs":     {{"componentstatuses", ""}},
	"ep":     {{"endpoints", ""}},
	"ev":     {{"events", ""}, {"events", "events.k8s.io"}},
	"limits": {{"limitranges", ""}},
	"no":     {{"nodes", ""}},
	"ns":     {{"namespaces", ""}},
	"po":     {{"pods", ""}},
	"pv":     {{"persistentvolumes", ""}},
	"pvc":    {{"persistentvolumeclaims", ""}},
	"quota":  {{"resourcequotas", ""}},
	"rc":     {{"replicationcontrollers", ""}},
	"sa":     {{"serviceaccounts", ""}},
	"svc":    {{"services", ""}},
	"deploy": {{"deployments", "apps"}},
	"ds":     {{"daemonsets", "apps"}},
	"rs":     {{"replicasets", "apps"}},
	"sts":    {{"statefulsets", "apps"}},
	"cj":     {{"cronjobs", "batch"}},
	"hpa":    {{"horizontalpodautoscalers", "autoscaling"}},
	"ing":    {{"ingresses", "networking.k8s.io"}},
	"netpol": {{"networkpolicies", "networking.k8s.io"}},
	"pdb":    {{"poddisruptionbudgets", "policy"}},
	"pc":     {{"priorityclasses", "scheduling.k8s.io"}},
	"sc":     {{"storageclasses", "storage.k8s.io"}},
	"csr":    {{"certificatesigningrequests", "certificates.k8s.io"}},
	"crd":    {{"customresourcedefinitions", "apiextensions.k8s.io"}},
	"crds":   {{"customresourcedefinitions", "apiextensions.k8s.io"}},
}

// displayName is how commands name a recorded resource: resource[.group],
// as kubectl does.
func displayName(info inspect.ResourceInfo) string {
	id := info.Identity
	if id.Group == "" {
		return id.Resource
	}
	return id.Resource + "." + id.Group
}

// scopeString describes the list/watch scope recorded for a resource.
func scopeString(id bolt.Identity) string {
	parts := []string{"all namespaces"}
	if id.Namespace != "" {
		parts[0] = "namespace " + id.Namespace
	}
	if id.LabelSelector != "" {
		parts = append(parts, "labels "+id.LabelSelector)
	}
	if id.FieldSelector != "" {
		parts = append(parts, "fields "+id.FieldSelector)
	}
	if id.Shard != "" {
		parts = append(parts, "shard "+id.Shard)
	}
	return strings.Join(parts, ", ")
}

// heldResources lists the resources of a file for error messages.
func heldResources(infos []inspect.ResourceInfo) string {
	if len(infos) == 0 {
		return "The file holds no resources"
	}
	var names []string
	for _, info := range infos {
		if info.Problem != "" {
			continue
		}
		n := displayName(info)
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return "The file holds: " + strings.Join(names, ", ")
}

// resolveResource finds the recorded resource arg names. It accepts what
// kubectl accepts where the file allows: the plural (pods), the singular
// (pod, from the recorded kind), a built-in short name (po, deploy), each
// optionally qualified by group (deployments.apps) or version and group
// (deployments.v1.apps), case-insensitively, and the recorded ID string
// that info prints (for files holding one resource under several scopes).
//
// When several resources of different groups match an unqualified name,
// the core group wins, as in kubectl; any other ambiguity is an error
// listing the candidates.
func resolveResource(path string, infos []inspect.ResourceInfo, arg string) (inspect.ResourceInfo, error) {
	return resolveResourceIn(path, infos, arg, "")
}

// resolveResourceIn is resolveResource where, among several scopes of one
// resource, the one recorded for namespace ns (when ns is given) wins, as
// -n picks it.
func resolveResourceIn(path string, infos []inspect.ResourceInfo, arg, ns string) (inspect.ResourceInfo, error) {
	for _, info := range infos {
		if info.Problem == "" && info.Identity.String() == arg {
			return info, nil
		}
	}
	lower := strings.ToLower(strings.TrimSpace(arg))
	gvr, gr := schema.ParseResourceArg(lower)
	var matches []inspect.ResourceInfo
	for _, info := range infos {
		if info.Problem != "" {
			continue
		}
		id := info.Identity
		switch {
		case gvr != nil && nameMatches(id, gvr.Resource) && id.Version == gvr.Version && id.Group == gvr.Group:
		case nameMatches(id, gr.Resource) && (gr.Group == "" || id.Group == gr.Group):
		default:
			continue
		}
		matches = append(matches, info)
	}
	if len(matches) > 1 && gr.Group == "" {
		var core []inspect.ResourceInfo
		for _, m := range matches {
			if m.Identity.Group == "" {
				core = append(core, m)
			}
		}
		if len(core) > 0 {
			matches = core
		}
	}
	if len(matches) > 1 && ns != "" {
		var scoped []inspect.ResourceInfo
		for _, m := range matches {
			if m.Identity.Namespace == ns {
				scoped = append(scoped, m)
			}
		}
		if len(scoped) == 1 {
			matches = scoped
		}
	}
	switch len(matches) {
	case 0:
		if n := unreadable(infos); n > 0 {
			return inspect.ResourceInfo{}, withHint(mark(bolt.ErrCorrupt, "resource %q not found in %s, whose metadata of %d resources is unreadable", arg, path, n),
				"%s; run 'snapshot verify %s' for the whole picture.", heldResources(infos), shellQuote(path))
		}
		return inspect.ResourceInfo{}, withHint(mark(ErrNotFound, "resource %q not found in %s", arg, path),
			"%s (see 'snapshot info %s').", heldResources(infos), shellQuote(path))
	case 1:
		return matches[0], nil
	}
	var lines []string
	for _, m := range matches {
		lines = append(lines, fmt.Sprintf("  %s (%s, %s): %s", displayName(m), groupVersion(m.Identity), scopeString(m.Identity), shellQuote(m.Identity.String())))
	}
	hint := "Name one by the ID 'snapshot info' prints (quoted for the shell)"
	if scopesDiffer(matches) {
		hint += ", or by -n NAMESPACE for the namespace-scoped copy"
	}
	return inspect.ResourceInfo{}, withHint(usageErrorf("resource %q matches %d resources in %s", arg, len(matches), path),
		"%s:\n%s", hint, strings.Join(lines, "\n"))
}

// unreadable counts the resources whose metadata cannot be read.
func unreadable(infos []inspect.ResourceInfo) int {
	n := 0
	for _, info := range infos {
		if info.Problem != "" {
			n++
		}
	}
	return n
}

// scopesDiffer reports whether some of matches are recorded for a
// namespace, which -n can pick.
func scopesDiffer(matches []inspect.ResourceInfo) bool {
	for _, m := range matches {
		if m.Identity.Namespace != "" {
			return true
		}
	}
	return false
}

// nameMatches reports whether name is the plural, the singular (lower-case
// kind) or a built-in short name of id.
func nameMatches(id bolt.Identity, name string) bool {
	if name == "" {
		return false
	}
	if name == strings.ToLower(id.Resource) || (id.Kind != "" && name == strings.ToLower(id.Kind)) {
		return true
	}
	for _, s := range shortNames[name] {
		if s.resource == id.Resource && s.group == id.Group {
			return true
		}
	}
	return false
}

// groupVersion is the apiVersion of id's objects.
func groupVersion(id bolt.Identity) string {
	return schema.GroupVersion{Group: id.Group, Version: id.Version}.String()
}

// kindOf is the recorded kind of a resource.
func kindOf(id bolt.Identity) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
}
