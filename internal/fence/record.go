package fence

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/internal/clip"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/versioned"
)

// NoGPUs is the fence of a record for a job that holds no GPU slice on a node that
// fences: there was nothing to fence, which fence-check must tell from a prolog that
// failed.
const NoGPUs = "nogpu"

// Record is what the prolog leaves for one job on one node: the fence the job got and,
// where it set limits, the cgroup they are on (path and inode, so the epilog and the
// sweep clear the limits of that very directory, and never those of a directory made
// later under the same name) and the GPUs that hold one. Failed says why the prolog
// could not set the fence the node promised: a step's check then refuses this run even
// if the node stopped promising a fence since (its inventory is rewritten when the
// driver stops answering), so a job whose fence failed never runs unfenced.
type Record struct {
	Version  int    `json:"version"`
	Job      string `json:"job"`
	Fence    string `json:"fence"`
	Cgroup   string `json:"cgroup,omitempty"`
	CgroupID uint64 `json:"cgroup_id,omitempty"`
	GPUs     []int  `json:"gpus,omitempty"`
	Failed   string `json:"failed,omitempty"`
}

// Held is the fence the job got by this record: "" when it held no GPU here or its
// fence failed.
func (r Record) Held() string {
	if r.Fence == NoGPUs || r.Failed != "" {
		return ""
	}
	return r.Fence
}

// MaxFailed bounds a record's reason: the first line of an error, clipped.
const MaxFailed = 1 << 10

// FailureReason is err as a record's Failed: its first line, carriage returns made
// spaces, never empty, clipped to MaxFailed, so that ParseRecord always reads it back. A record it
// would refuse counts as none, and a step's check would then fall back on the node's
// inventory, which is what the reason is there to outlast.
func FailureReason(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	line = strings.TrimSpace(strings.ReplaceAll(line, "\r", " "))
	if line == "" {
		line = "an error with no message" // an empty Failed would read as a fence set
	}
	return clip.String(line, MaxFailed)
}

// MaxRecord bounds a record file: a few GPUs and a path.
const MaxRecord = 8 << 10

// Encode is the record's file content.
func (r Record) Encode() []byte {
	r.Version = versioned.FenceRecord.Current
	b, _ := json.Marshal(r)
	return append(b, '\n')
}

// ParseRecord reads a record written for job id. A record of the release before
// (the fence's name alone) is read with no cgroup. Anything else is an error: the
// directory is root's, but a damaged file never counts as a fence.
func ParseRecord(b []byte, id string) (Record, error) {
	t := strings.TrimSpace(string(b))
	if known(t) {
		return Record{Version: 1, Job: id, Fence: t}, nil
	}
	var r Record
	if err := versioned.Strict(b, &r); err != nil {
		return Record{}, fmt.Errorf("fence record of job %s: %v", id, err)
	}
	if err := versioned.FenceRecord.Check(r.Version); err != nil {
		return Record{}, fmt.Errorf("fence record of job %s: %v", id, err)
	}
	if r.Job != id || !known(r.Fence) {
		return Record{}, fmt.Errorf("fence record of job %s: job %q fence %q", id, r.Job, r.Fence)
	}
	if (r.Cgroup == "") != (len(r.GPUs) == 0) {
		return Record{}, fmt.Errorf("fence record of job %s: limits on GPUs %v with cgroup %q", id, r.GPUs, r.Cgroup)
	}
	if len(r.Failed) > MaxFailed || strings.ContainsAny(r.Failed, "\n\r") {
		return Record{}, fmt.Errorf("fence record of job %s: a failure reason of %d bytes or over more than one line", id, len(r.Failed))
	}
	return r, nil
}

func known(f string) bool {
	switch f {
	case inventory.FenceDriver, inventory.FenceHardware, inventory.FenceMPS, inventory.FenceNone, NoGPUs:
		return true
	}
	return false
}
