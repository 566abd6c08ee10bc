package printers

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func init() {
	register("", "Namespace", kindColumns[corev1.Namespace]{
		headers: []string{"NAME", "STATUS", "AGE"},
		cells: func(n *corev1.Namespace, _ bool, now time.Time) []string {
			return []string{n.Name, string(n.Status.Phase), age(n.CreationTimestamp, now)}
		},
	})
	register("", "ConfigMap", kindColumns[corev1.ConfigMap]{
		headers: []string{"NAME", "DATA", "AGE"},
		cells: func(c *corev1.ConfigMap, _ bool, now time.Time) []string {
			return []string{c.Name, count(len(c.Data) + len(c.BinaryData)), age(c.CreationTimestamp, now)}
		},
	})
	register("", "Secret", kindColumns[corev1.Secret]{
		headers: []string{"NAME", "TYPE", "DATA", "AGE"},
		cells: func(s *corev1.Secret, _ bool, now time.Time) []string {
			return []string{s.Name, string(s.Type), count(len(s.Data)), age(s.CreationTimestamp, now)}
		},
	})
	register("", "Service", kindColumns[corev1.Service]{
		headers: []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"},
		wide:    []string{"SELECTOR"},
		cells: func(s *corev1.Service, wide bool, now time.Time) []string {
			ip := "<none>"
			if len(s.Spec.ClusterIPs) > 0 {
				ip = s.Spec.ClusterIPs[0]
			}
			row := []string{s.Name, string(s.Spec.Type), ip, serviceExternalIP(s, wide), orNone(servicePorts(s.Spec.Ports)), age(s.CreationTimestamp, now)}
			if wide {
				row = append(row, labels.FormatLabels(s.Spec.Selector))
			}
			return row
		},
	})
	register("", "Endpoints", kindColumns[corev1.Endpoints]{ //nolint:staticcheck // kubectl still prints v1 Endpoints
		headers: []string{"NAME", "ENDPOINTS", "AGE"},
		cells: func(e *corev1.Endpoints, _ bool, now time.Time) []string { //nolint:staticcheck
			return []string{e.Name, endpointsCell(e), age(e.CreationTimestamp, now)}
		},
	})
	register("", "Node", kindColumns[corev1.Node]{
		headers: []string{"NAME", "STATUS", "ROLES", "AGE", "VERSION"},
		wide:    []string{"INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"},
		cells:   nodeRow,
	})
	register("", "PersistentVolume", kindColumns[corev1.PersistentVolume]{
		headers: []string{"NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"},
		wide:    []string{"VOLUMEMODE"},
		cells: func(pv *corev1.PersistentVolume, wide bool, now time.Time) []string {
			claim := ""
			if r := pv.Spec.ClaimRef; r != nil {
				claim = r.Namespace + "/" + r.Name
			}
			phase := string(pv.Status.Phase)
			if pv.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			class := pv.Spec.StorageClassName
			if a, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]; ok {
				class = a
			}
			size := pv.Spec.Capacity[corev1.ResourceStorage]
			row := []string{pv.Name, size.String(), accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
				phase, claim, class, unset(pv.Spec.VolumeAttributesClassName), pv.Status.Reason, age(pv.CreationTimestamp, now)}
			if wide {
				row = append(row, volumeMode(pv.Spec.VolumeMode))
			}
			return row
		},
	})
	register("", "PersistentVolumeClaim", kindColumns[corev1.PersistentVolumeClaim]{
		headers: []string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"},
		wide:    []string{"VOLUMEMODE"},
		cells: func(c *corev1.PersistentVolumeClaim, wide bool, now time.Time) []string {
			phase := string(c.Status.Phase)
			if c.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			capacity, modes := "", ""
			if c.Spec.VolumeName != "" {
				modes = accessModes(c.Status.AccessModes)
				q := c.Status.Capacity[corev1.ResourceStorage]
				capacity = q.String()
			}
			class := ""
			if a, ok := c.Annotations[corev1.BetaStorageClassAnnotation]; ok {
				class = a
			} else if c.Spec.StorageClassName != nil {
				class = *c.Spec.StorageClassName
			}
			row := []string{c.Name, phase, c.Spec.VolumeName, capacity, modes, class, unset(c.Spec.VolumeAttributesClassName), age(c.CreationTimestamp, now)}
			if wide {
				row = append(row, volumeMode(c.Spec.VolumeMode))
			}
			return row
		},
	})
}

// eventColumns is kubectl's event table; its NAME column is in -o wide
// only, last.
var eventColumns = kindColumns[corev1.Event]{
	headers: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
	cells: func(e *corev1.Event, wide bool, now time.Time) []string {
		first := age(e.FirstTimestamp, now)
		if e.FirstTimestamp.IsZero() {
			first = microAge(e.EventTime, now)
		}
		last := age(e.LastTimestamp, now)
		if e.LastTimestamp.IsZero() {
			last = first
		}
		n := e.Count
		if e.Series != nil {
			last, n = microAge(e.Series.LastObservedTime, now), e.Series.Count
		} else if n == 0 {
			n = 1
		}
		target := strings.ToLower(e.InvolvedObject.Kind)
		if e.InvolvedObject.Name != "" {
			target += "/" + e.InvolvedObject.Name
		}
		if !wide {
			return []string{last, e.Type, e.Reason, target, strings.TrimSpace(e.Message)}
		}
		return []string{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, eventSource(e),
			strings.TrimSpace(e.Message), first, count(n), e.Name}
	},
}

func init() {
	// -o wide of events inserts columns in the middle: its header is a
	// list of its own.
	eventColumns.wideHeader = []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"}
	register("", "Event", eventColumns)
}

func microAge(t metav1.MicroTime, now time.Time) string {
	return age(metav1.Time{Time: t.Time}, now)
}

func eventSource(e *corev1.Event) string {
	component, instance := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if instance == "" {
		instance = e.ReportingInstance
	}
	if instance == "" {
		return component
	}
	return component + ", " + instance
}

func unset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

// accessModes is kubectl's short form (RWO,ROX,RWX,RWOP).
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// loadBalancerWidth is the width kubectl cuts a load balancer's addresses
// to outside -o wide.
const loadBalancerWidth = 16

func serviceExternalIP(s *corev1.Service, wide bool) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(s.Spec.ExternalIPs) > 0 {
			return strings.Join(s.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			switch {
			case in.IP != "":
				ips = append(ips, in.IP)
			case in.Hostname != "":
				ips = append(ips, in.Hostname)
			}
		}
		slices.Sort(ips)
		ips = slices.Compact(ips)
		lb := strings.Join(ips, ",")
		if !wide && len(lb) > loadBalancerWidth {
			lb = lb[:loadBalancerWidth-3] + "..."
		}
		if len(s.Spec.ExternalIPs) > 0 {
			var all []string
			if lb != "" {
				all = strings.Split(lb, ",")
			}
			return strings.Join(append(all, s.Spec.ExternalIPs...), ",")
		}
		if lb != "" {
			return lb
		}
		return "<pending>"
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	}
	return "<unknown>"
}

func servicePorts(ports []corev1.ServicePort) string {
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			out[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	return strings.Join(out, ",")
}

// endpointsCell lists up to three addresses, as kubectl does.
func endpointsCell(e *corev1.Endpoints) string { //nolint:staticcheck
	if len(e.Subsets) == 0 {
		return "<none>"
	}
	const most = 3
	var list []string
	more, n := false, 0
	add := func(s string) {
		if len(list) == most {
			more = true
			return
		}
		list = append(list, s)
	}
	for _, ss := range e.Subsets {
		if len(ss.Ports) == 0 {
			n += len(ss.Addresses)
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			n += len(ss.Addresses)
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	out := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", out, n-most)
	}
	return out
}

// nodeRoleLabelPrefix and nodeRoleLabel name a node's roles.
const (
	nodeRoleLabelPrefix = "node-role.kubernetes.io/"
	nodeRoleLabel       = "kubernetes.io/role"
)

func nodeRow(n *corev1.Node, wide bool, now time.Time) []string {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				status = append(status, string(c.Type))
			} else {
				status = append(status, "Not"+string(c.Type))
			}
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, nodeRoleLabelPrefix) && k != nodeRoleLabelPrefix:
			roles = append(roles, strings.TrimPrefix(k, nodeRoleLabelPrefix))
		case k == nodeRoleLabel && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	roles = slices.Compact(roles)
	row := []string{n.Name, strings.Join(status, ","), orNone(strings.Join(roles, ",")), age(n.CreationTimestamp, now), n.Status.NodeInfo.KubeletVersion}
	if wide {
		info := n.Status.NodeInfo
		osImage, kernel, runtime := orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion)
		if info.Architecture != "" {
			kernel += " (" + info.Architecture + ")"
		}
		row = append(row, nodeAddress(n, corev1.NodeInternalIP), nodeAddress(n, corev1.NodeExternalIP), osImage, kernel, runtime)
	}
	return row
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}
