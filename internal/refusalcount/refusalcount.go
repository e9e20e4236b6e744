// Package refusalcount counts the gpu:mem jobs job_submit refuses, by a small fixed set of
// reason classes, and is the one home of the file that carries those counts from
// slurmctld to gpumemctl exporter. A refused job never enters Slurm's queue, so nothing
// Slurm reports shows it; the plugin counts it in memory on the submit path (an atomic
// add, no I/O) and its loader goroutine writes the counts now and then.
//
// Labels are the class names below, never anything from the job: the series stay few
// however many users and messages there are.
package refusalcount

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/versioned"
)

// Class is why a job was refused.
type Class int

const (
	// Invalid: the request cannot be read or is spelt in a way gpumem does not accept
	// (a bad size, gpu:mem next to a GPU count in the GRES, --gres given twice in a script).
	Invalid Class = iota
	// NoFit: the request is well formed but no GPU of the partitions the job may use can
	// hold it (too big, too many GPUs, a limit of the shape).
	NoFit
	// Unavailable: gpumem itself could not decide (no inventory yet, an internal error);
	// the user was told to try again.
	Unavailable
	nClasses
)

// names are the label values, in Class order.
var names = [nClasses]string{"invalid_request", "no_fit", "gpumem_unavailable"}

// String is the class's label value.
func (c Class) String() string {
	if c >= 0 && c < nClasses {
		return names[c]
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Names lists every class's label value, in a fixed order.
func Names() []string { return names[:] }

// Counter counts refusals by class. It is safe for any number of concurrent callers.
type Counter struct{ n [nClasses]atomic.Uint64 }

// Add counts one refusal of class c.
func (k *Counter) Add(c Class) {
	if c >= 0 && c < nClasses {
		k.n[c].Add(1)
	}
}

// Counts is every class's count, by label value.
func (k *Counter) Counts() map[string]uint64 {
	m := make(map[string]uint64, nClasses)
	for i := range k.n {
		m[names[i]] = k.n[i].Load()
	}
	return m
}

// Version is the file format's; Decode refuses any other.
var Version = versioned.RefusalCounts.Current

// State is the file: cumulative counts since Since (when the plugin was loaded, that
// is slurmctld's start or its last reconfigure), written at Written.
type State struct {
	Version int               `json:"version"`
	Since   time.Time         `json:"since"`
	Written time.Time         `json:"written"`
	Refused map[string]uint64 `json:"refused"`
}

// maxBytes caps what Read accepts: the file is a few hundred bytes.
const maxBytes = 64 << 10

// Write puts s at path, atomically and readable by its owner only: the counts are an
// administrator's business.
func Write(path string, s State) error {
	s.Version = Version
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// Read reads and decodes the file at path.
func Read(path string) (State, error) {
	b, err := atomicfile.ReadCapped(path, maxBytes)
	if err != nil {
		return State{}, err
	}
	return Decode(b)
}

// Decode reads a file's contents; only the known classes are kept, so a damaged or
// foreign file cannot add label values.
func Decode(b []byte) (State, error) {
	var s State
	if err := versioned.Strict(b, &s); err != nil {
		return State{}, fmt.Errorf("not a refusal counts file: %w", err)
	}
	if err := versioned.RefusalCounts.Check(s.Version); err != nil {
		return State{}, err
	}
	known := make(map[string]uint64, nClasses)
	for _, n := range names {
		known[n] = s.Refused[n]
	}
	s.Refused = known
	return s, nil
}
