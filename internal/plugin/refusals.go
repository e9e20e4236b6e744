package plugin

import (
	"maps"
	"os"
	"path/filepath"

	"github.com/gpumem/gpumem/internal/refusalcount"
)

// refusedWrite is what the loader last wrote to RefusalCounts, so that it writes only
// when a count or the path changed, and logs a failure once, not at every turn.
type refusedWrite struct {
	path   string
	counts map[string]uint64
	err    string
}

// writeRefused writes the refusal counts to RefusalCounts when they changed. Only the
// loader calls it: the submit path never does I/O. A failure is logged once per cause
// and tried again at the next turn.
func (p *Plugin) writeRefused() {
	path := p.st.Load().cfg.RefusalCounts
	if path == "" || path == "none" {
		return
	}
	counts := p.refused.Counts()
	if path == p.written.path && maps.Equal(counts, p.written.counts) {
		return
	}
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = refusalcount.Write(path, refusalcount.State{Since: p.started, Written: p.now(), Refused: counts})
	}
	if err != nil {
		if err.Error() != p.written.err {
			p.log.errorf("refusal counts %s: %v; gpumemctl exporter shows no gpumem_refused_jobs_total until it can be written (RefusalCounts in gpumem.conf)", path, err)
		}
		p.written.err = err.Error()
		return
	}
	p.written = refusedWrite{path: path, counts: counts}
}
