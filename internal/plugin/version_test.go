package plugin

import (
	"testing"

	"github.com/gpumem/gpumem/internal/version"
)

// TestLoadedLineNamesVersion: the line slurmctld and srun log at init says which gpumem
// build is loaded, so an admin can tell after an upgrade whether Slurm was restarted.
func TestLoadedLineNamesVersion(t *testing.T) {
	sink := &logSink{}
	realPlugin(t, sink)
	if !sink.has("loaded: config ") || !sink.has(", gpumem "+version.String()) {
		t.Errorf("no loaded: line with gpumem %s in %q", version.String(), sink.infos)
	}
}
