package migapply

// The journal: the apply's state on disk, written after each step, so a gpumemd killed
// at any point finishes or rolls back the change when it starts again.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/versioned"
)

// JournalVersion is the version of the journal file this package writes. A reader
// also takes version 1 (no owner), which an older gpumemd killed mid-apply left.
var JournalVersion = versioned.MIGJournal.Current

// GPUChange is one GPU's change in the journal.
type GPUChange struct {
	Index int    `json:"index"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// journal is the apply's state on disk, written (privately) after each step.
type journal struct {
	Version int         `json:"version"`
	Node    string      `json:"node"`
	Owner   *Owner      `json:"owner,omitempty"` // the apply that wrote it last; nil in version 1
	Step    string      `json:"step"`            // the last step done
	Drained bool        `json:"drained"`         // this apply drained the node, so it resumes it
	GPUs    []GPUChange `json:"gpus"`
	Started time.Time   `json:"started"`
}

func (a *Applier) step(j *journal, step string) error {
	j.Step = step
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(a.Journal, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	a.logf("step %s", step)
	if a.crash != nil && a.crash(step) {
		return ErrCrashed
	}
	return nil
}

func (a *Applier) read() (*journal, error) {
	b, err := os.ReadFile(a.Journal)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var j journal
	if err := versioned.Strict(b, &j); err != nil {
		return nil, fmt.Errorf("journal %s: %w; move it away once the node is checked by hand", a.Journal, err)
	}
	if err := versioned.MIGJournal.Check(j.Version); err != nil {
		return nil, fmt.Errorf("journal %s: %w", a.Journal, err)
	}
	if j.Node != a.Node {
		return nil, fmt.Errorf("journal %s is node %s's, not %s's", a.Journal, j.Node, a.Node)
	}
	for _, c := range j.GPUs {
		if _, err := mig.ParseLayout(c.To); err != nil {
			return nil, fmt.Errorf("journal %s: GPU %d: %w", a.Journal, c.Index, err)
		}
	}
	return &j, nil
}

// Pending reports whether an apply is under way (or was interrupted): gpumemd then
// leaves gres.conf alone, since the layout it would describe is changing.
func (a *Applier) Pending() bool {
	_, err := os.Stat(a.Journal)
	return err == nil
}

func (a *Applier) clear() error {
	if err := os.Remove(a.Journal); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

func summary(j *journal) string {
	parts := make([]string, len(j.GPUs))
	for i, c := range j.GPUs {
		parts[i] = fmt.Sprintf("GPU %d %s -> %s", c.Index, orNone(c.From), orNone(c.To))
	}
	return strings.Join(parts, "; ")
}
