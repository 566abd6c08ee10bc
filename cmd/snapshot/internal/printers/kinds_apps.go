package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func init() {
	register("apps", "Deployment", kindColumns[appsv1.Deployment]{
		headers: []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"},
		wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		cells: func(d *appsv1.Deployment, wide bool, now time.Time) []string {
			row := []string{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)),
				count(d.Status.UpdatedReplicas), count(d.Status.AvailableReplicas), age(d.CreationTimestamp, now)}
			if wide {
				names, images := containerCells(d.Spec.Template.Spec.Containers)
				sel := "<invalid>"
				if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
					sel = s.String()
				}
				row = append(row, names, images, sel)
			}
			return row
		},
	})
	register("apps", "ReplicaSet", kindColumns[appsv1.ReplicaSet]{
		headers: []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"},
		wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		cells: func(r *appsv1.ReplicaSet, wide bool, now time.Time) []string {
			row := []string{r.Name, count(replicas(r.Spec.Replicas)), count(r.Status.Replicas), count(r.Status.ReadyReplicas), age(r.CreationTimestamp, now)}
			if wide {
				names, images := containerCells(r.Spec.Template.Spec.Containers)
				row = append(row, names, images, metav1.FormatLabelSelector(r.Spec.Selector))
			}
			return row
		},
	})
	register("apps", "StatefulSet", kindColumns[appsv1.StatefulSet]{
		headers: []string{"NAME", "READY", "AGE"},
		wide:    []string{"CONTAINERS", "IMAGES"},
		cells: func(s *appsv1.StatefulSet, wide bool, now time.Time) []string {
			row := []string{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)), age(s.CreationTimestamp, now)}
			if wide {
				names, images := containerCells(s.Spec.Template.Spec.Containers)
				row = append(row, names, images)
			}
			return row
		},
	})
	register("apps", "DaemonSet", kindColumns[appsv1.DaemonSet]{
		headers: []string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"},
		wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		cells: func(d *appsv1.DaemonSet, wide bool, now time.Time) []string {
			st := d.Status
			row := []string{d.Name, count(st.DesiredNumberScheduled), count(st.CurrentNumberScheduled), count(st.NumberReady),
				count(st.UpdatedNumberScheduled), count(st.NumberAvailable), labels.FormatLabels(d.Spec.Template.Spec.NodeSelector), age(d.CreationTimestamp, now)}
			if wide {
				names, images := containerCells(d.Spec.Template.Spec.Containers)
				row = append(row, names, images, metav1.FormatLabelSelector(d.Spec.Selector))
			}
			return row
		},
	})
}

// replicas is spec.replicas, defaulted to 1 as the API server does.
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// containerCells are the CONTAINERS and IMAGES cells of -o wide.
func containerCells(cs []corev1.Container) (names, images string) {
	n, i := make([]string, len(cs)), make([]string, len(cs))
	for k, c := range cs {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}
