package health

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/versioned"
)

// stateVersion is the format of the state file; a file of another version is set aside
// (logged) rather than misread.
var stateVersion = versioned.HealthState.Current

// persisted is what the monitor keeps across restarts: a restarted gpumemd must not
// forget an XID 79 and resume the node it drained for it, nor take a GPU that vanished
// while it was down for the node's whole set.
type persisted struct {
	Version int                `json:"version"`
	XIDs    map[string]xidMark `json:"xids"`           // GPU index -> the critical XID held for it
	GPUs    map[string]int     `json:"gpus,omitempty"` // UUID -> index of the GPUs first seen answering
	Drained string             `json:"drained"`        // the reason of the monitor's own drain; "" when none
}

type xidMark struct {
	XID int       `json:"xid"`
	At  time.Time `json:"at"`
}

// maxState bounds the file read at start.
const maxState = 1 << 20

// load reads the state file once.
func (m *Monitor) load() {
	if m.loaded {
		return
	}
	m.loaded = true
	m.st = persisted{Version: stateVersion, XIDs: map[string]xidMark{}}
	if m.State == "" {
		return
	}
	b, err := atomicfile.ReadCapped(m.State, maxState)
	if os.IsNotExist(err) {
		return
	}
	var st persisted
	if err == nil {
		err = versioned.Strict(b, &st)
	}
	if err == nil {
		err = versioned.HealthState.Check(st.Version)
	}
	if err != nil {
		m.log(slog.LevelError, "health state unreadable; starting without it", "file", m.State, "err", err)
		return
	}
	if st.XIDs == nil {
		st.XIDs = map[string]xidMark{}
	}
	m.st = st
}

// save writes the state file privately (0600) and atomically (atomicfile.Write: a
// temporary file of its own, synced, renamed over the old one, never through a link). A failure is logged; health goes on.
func (m *Monitor) save() {
	if m.State == "" {
		return
	}
	if err := writePrivate(m.State, m.st); err != nil {
		m.log(slog.LevelError, "cannot keep the health state", "file", m.State, "err", err)
	}
}

func writePrivate(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}
