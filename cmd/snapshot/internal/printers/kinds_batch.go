package printers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

func init() {
	register("batch", "Job", kindColumns[batchv1.Job]{
		headers: []string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"},
		wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		cells:   jobRow,
	})
	register("discovery.k8s.io", "EndpointSlice", kindColumns[discoveryv1.EndpointSlice]{
		headers: []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"},
		cells: func(s *discoveryv1.EndpointSlice, _ bool, now time.Time) []string {
			var ports, addrs []string
			for _, p := range s.Ports {
				n := "*"
				if p.Port != nil {
					n = strconv.Itoa(int(*p.Port))
				} else if p.Name != nil {
					n = *p.Name
				}
				ports = append(ports, n)
			}
			for _, e := range s.Endpoints {
				addrs = append(addrs, e.Addresses...)
			}
			return []string{s.Name, string(s.AddressType), withMore(ports), withMore(addrs), age(s.CreationTimestamp, now)}
		},
	})
}

// withMore lists up to three values, as kubectl's endpoint slice columns.
func withMore(list []string) string {
	const most = 3
	if len(list) > most {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:most], ","), len(list)-most)
	}
	if len(list) == 0 {
		return "<unset>"
	}
	return strings.Join(list, ",")
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Type == t && c.Status == corev1.ConditionTrue
	})
}

func jobRow(j *batchv1.Job, wide bool, now time.Time) []string {
	var completions string
	switch {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1:
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var took string
	switch {
	case j.Status.StartTime == nil:
	case j.Status.CompletionTime == nil:
		took = duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		took = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
	status := "Running"
	switch {
	case jobCondition(j, batchv1.JobComplete):
		status = "Complete"
	case jobCondition(j, batchv1.JobFailed):
		status = "Failed"
	case j.DeletionTimestamp != nil:
		status = "Terminating"
	case jobCondition(j, batchv1.JobSuspended):
		status = "Suspended"
	case jobCondition(j, batchv1.JobFailureTarget):
		status = "FailureTarget"
	case jobCondition(j, batchv1.JobSuccessCriteriaMet):
		status = "SuccessCriteriaMet"
	}
	row := []string{j.Name, status, completions, took, age(j.CreationTimestamp, now)}
	if wide {
		names, images := containerCells(j.Spec.Template.Spec.Containers)
		row = append(row, names, images, metav1.FormatLabelSelector(j.Spec.Selector))
	}
	return row
}
