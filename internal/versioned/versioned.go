// Package versioned is the one home of gpumem's versioned formats: every file or output
// that crosses processes or releases is listed here with its current version and the
// oldest one this release reads, and read through one strict decoder that refuses
// unknown fields, as NVIDIA/mig-parted's api/spec/v1 does: a field this release does not
// know is a newer writer's that forgot to raise the version, or a typo, and is never
// silently dropped.
package versioned

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Format is one versioned format.
type Format struct {
	Name    string // what it is, in messages
	Current int    // the version this release writes
	Oldest  int    // the oldest version this release reads
	// Unversioned is the version of a document without a "version" field (written
	// before the field existed), 0 when the field is required.
	Unversioned int
	Newer       string // what to do with a document newer than Current
}

// The formats. Files: written by one process, read by another, possibly of another
// release, or answered over HTTP. Outputs: JSON that gpumemctl prints for scripts (-o
// json).
var (
	Inventory     = Format{Name: "inventory", Current: 3, Oldest: 1, Unversioned: 1, Newer: "upgrade gpumem here to the release of the gpumemd that wrote it"}
	UsageSnapshot = Format{Name: "usage snapshot", Current: 1, Oldest: 1, Unversioned: 1, Newer: "run the gpumemctl steer of this release"}
	HealthState   = Format{Name: "health state", Current: 1, Oldest: 1, Newer: "it was written by a newer gpumemd"}
	RefusalCounts = Format{Name: "refusal counts file", Current: 1, Oldest: 1, Newer: "it was written by a newer job_submit/gpumem"}
	MIGJournal    = Format{Name: "MIG apply journal", Current: 2, Oldest: 1, Newer: "it was written by a newer gpumemd; move it away once the node is checked by hand"}
	MIGDesired    = Format{Name: "desired MIG layout", Current: 1, Oldest: 1, Newer: "write it for this release"}
	// FenceRecord is the prolog's record of one job's fence, read by the task prolog,
	// fence-check, the epilog and gpumemd's sweep; version 1 was the fence's name alone
	// (plain text, no cgroup), read as such; version 3 added why a fence failed.
	FenceRecord = Format{Name: "fence record", Current: 3, Oldest: 2, Newer: "it was written by a newer gpumemd"}
	// HistoryAPI is the answer of gpumemd's /api/jobs and /api/jobs/ID, read by the
	// gpumemctl of another release during an upgrade; answers from before the field are
	// version 1.
	// JobSummary is the token gpumemd writes into a job's AdminComment at its end, read
	// by gpumemctl used (any release) from sacct long after.
	JobSummary = Format{Name: "gpumem job summary", Current: 1, Oldest: 1, Newer: "upgrade gpumemctl to the release of the node's gpumemd"}
	HistoryAPI = Format{Name: "gpumemd history API answer", Current: 1, Oldest: 1, Unversioned: 1, Newer: "upgrade gpumemctl to the release of the node's gpumemd"}

	Report      = Format{Name: "gpumemctl report", Current: 1, Oldest: 1}
	SteerReport = Format{Name: "gpumemctl steer report", Current: 1, Oldest: 1}
	Quota       = Format{Name: "gpumemctl quota", Current: 1, Oldest: 1}
	MIGStatus   = Format{Name: "gpumemctl mig status", Current: 1, Oldest: 1}
	Jobs        = Format{Name: "gpumemctl jobs", Current: 1, Oldest: 1}
	// Job is gpumemctl jobs JOBID: one job's samples from each node that has it.
	Job      = Format{Name: "gpumemctl jobs JOBID", Current: 1, Oldest: 1}
	Advise   = Format{Name: "gpumemctl advise", Current: 1, Oldest: 1}
	Used     = Format{Name: "gpumemctl used", Current: 1, Oldest: 1}
	Why      = Format{Name: "gpumemctl why", Current: 1, Oldest: 1}
	Simulate = Format{Name: "gpumemctl simulate", Current: 1, Oldest: 1}
	// SimulateDepartures is simulate --departures, whose rows are queue waits.
	SimulateDepartures = Format{Name: "gpumemctl simulate --departures", Current: 1, Oldest: 1}
	// SimulateSweep is simulate --sweep, whose rows are paired differences per point.
	SimulateSweep = Format{Name: "gpumemctl simulate --sweep", Current: 1, Oldest: 1}
)

// Check refuses a version this release cannot read; v is the document's "version"
// field (0 when it had none).
func (f Format) Check(v int) error {
	if v == 0 && f.Unversioned > 0 {
		v = f.Unversioned
	}
	if v >= f.Oldest && v <= f.Current && v > 0 {
		return nil
	}
	reads := fmt.Sprintf("version %d", f.Current)
	if f.Oldest < f.Current {
		reads = fmt.Sprintf("versions %d to %d", f.Oldest, f.Current)
	}
	msg := fmt.Sprintf("%s: format version %d; this gpumem reads %s", f.Name, v, reads)
	if v > f.Current && f.Newer != "" {
		msg += ": " + f.Newer
	}
	return fmt.Errorf("%s", msg)
}

// Strict decodes one JSON document into v, refusing fields v does not have and
// anything after the document.
func Strict(b []byte, v any) error {
	if !json.Valid(b) {
		// json.Unmarshal says where (a *json.SyntaxError with its offset); the decoder
		// below would only say "unexpected EOF" for a cut file.
		var any json.RawMessage
		return json.Unmarshal(b, &any)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}
