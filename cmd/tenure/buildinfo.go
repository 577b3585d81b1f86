package main

import (
	"cmp"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// revision is the commit the binary was built from, set at build time like
// version: -ldflags "-X main.revision=$(git rev-parse HEAD)" (the Makefile
// does). Without it, the revision Go recorded, if any.
var revision string

// buildInfo is tenure_build_info: 1, with the version that -ldflags set
// (main.version), the Go version and the VCS revision the binary was built
// from ("unknown" when neither -ldflags nor Go recorded one, as with
// -buildvcs=false).
func buildInfo() prometheus.Collector {
	revision := revision
	if bi, ok := debug.ReadBuildInfo(); ok && revision == "" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "tenure_build_info",
		Help:        "1, labelled with the version, Go version and VCS revision of this server's binary.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version(), "revision": cmp.Or(revision, "unknown")},
	})
	g.Set(1)
	return g
}
