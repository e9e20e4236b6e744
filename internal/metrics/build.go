package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpumem/gpumem/internal/version"
)

// NewBuildInfo is gpumem_build_info{version,revision,goversion} 1, the <exporter>_build_info
// convention of Prometheus exporters, so a dashboard can show which release each node
// runs and an upgrade can be followed across the cluster.
func NewBuildInfo() prometheus.Collector {
	return newBuildInfo(version.Get())
}

func newBuildInfo(i version.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help:        "A metric with a constant '1' value labeled by the version, revision and Go version gpumemd was built from.",
		ConstLabels: prometheus.Labels{"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion},
	})
	g.Set(1)
	return g
}
