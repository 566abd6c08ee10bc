package bolt

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// File check metrics, labelled file=<the path given to Open>:
//
//	warmcache_store_file_corrupt               1 once corruption was found in the open file (the check or a read), else 0
//	warmcache_store_file_check_done            1 once every page of the file was checked (at Open or in the background), else 0
//	warmcache_store_file_check_duration_seconds how long the background check took (0 when Open checked every page)
//
// Registered on Options.Registerer, like the hot tier's (hotmetrics.go).
type fileCheckMetrics struct {
	corruptG, doneG, durationG prometheus.Gauge
}

// newFileCheckMetrics creates the file's series and registers their
// collectors on reg if it is not nil.
func newFileCheckMetrics(reg prometheus.Registerer, path string) (*fileCheckMetrics, error) {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "warmcache", Subsystem: "store", Name: name, Help: help}, []string{"file"})
	}
	vecs := []*prometheus.GaugeVec{
		gauge("file_corrupt", "1 once corruption was found in the open cache file (the background check or a read), else 0."),
		gauge("file_check_done", "1 once every page of the cache file was checked (at open or in the background), else 0."),
		gauge("file_check_duration_seconds", "How long the background check of every page of the cache file took (0 when Open checked them)."),
	}
	if reg != nil {
		for i := range vecs {
			if err := register(reg, &vecs[i]); err != nil {
				return nil, err
			}
		}
	}
	m := &fileCheckMetrics{corruptG: vecs[0].WithLabelValues(path), doneG: vecs[1].WithLabelValues(path), durationG: vecs[2].WithLabelValues(path)}
	m.corruptG.Set(0)
	m.doneG.Set(0)
	m.durationG.Set(0)
	return m, nil
}

// corrupt records that corruption was found.
func (m *fileCheckMetrics) corrupt() { m.corruptG.Set(1) }

// verdict records the end of the check.
func (m *fileCheckMetrics) verdict(err error, d time.Duration) {
	if err != nil {
		m.corrupt()
	}
	m.doneG.Set(1)
	m.durationG.Set(d.Seconds())
}
