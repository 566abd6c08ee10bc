package apiserver

import (
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// verbs are what every served resource allows.
var verbs = metav1.Verbs{"get", "list", "watch"}

// version answers /version.
func (h *Handler) version(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, &version.Info{Major: "1", Minor: "36", GitVersion: h.opts.Version, Platform: "snapshot"})
}

// apiVersions answers /api: the core group's only version.
func (h *Handler) apiVersions(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, &metav1.APIVersions{
		TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
		Versions:                   []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: ""}},
	})
}

// groups returns the API groups of the resources (not the core group), in
// order of name, with their versions in order of first appearance.
func (h *Handler) groups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, r := range h.opts.Resources {
		g := r.GVR.Group
		if g == "" {
			continue
		}
		i := slices.IndexFunc(out, func(a metav1.APIGroup) bool { return a.Name == g })
		if i < 0 {
			out = append(out, metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g})
			i = len(out) - 1
		}
		gv := metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + r.GVR.Version, Version: r.GVR.Version}
		if !slices.Contains(out[i].Versions, gv) {
			out[i].Versions = append(out[i].Versions, gv)
		}
	}
	for i := range out {
		out[i].PreferredVersion = out[i].Versions[0]
	}
	slices.SortFunc(out, func(a, b metav1.APIGroup) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// groupList answers /apis.
func (h *Handler) groupList(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: h.groups()})
}

// group answers /apis/GROUP.
func (h *Handler) group(w http.ResponseWriter, name string) {
	for _, g := range h.groups() {
		if g.Name == name {
			writeJSON(w, http.StatusOK, &g)
			return
		}
	}
	notFound(w)
}

// resourceList answers /api/v1 and /apis/GROUP/VERSION: the resources the
// file holds there.
func (h *Handler) resourceList(w http.ResponseWriter, group, version string) {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv, APIResources: []metav1.APIResource{}}
	for _, r := range h.opts.Resources {
		if r.GVR.Group != group || r.GVR.Version != version {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.GVR.Resource, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
	}
	if len(list.APIResources) == 0 && group != "" {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, &list)
}
