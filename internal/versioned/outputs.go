package versioned

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The documents of gpumemctl's -o json outputs, each named after its Format and made
// by its New function, which sets the version the Format writes: an output cannot be
// printed without it. What an output lists (advise's groups, report's rows, ...) is its
// own package's type, a type parameter here, so that this package imports none of them.

// AdviseDoc is `gpumemctl advise -o json` (Advise).
type AdviseDoc[Row any] struct {
	Version    int     `json:"version"`
	By         string  `json:"by"`
	Percentile float64 `json:"percentile"`
	Groups     []Row   `json:"groups"`
}

// NewAdvise is advise's document: groups by what by names, at percentile.
func NewAdvise[Row any](by string, percentile float64, groups []Row) AdviseDoc[Row] {
	return AdviseDoc[Row]{Advise.Current, by, percentile, orEmpty(groups)}
}

// NodesDoc is what each node answered: `gpumemctl jobs -o json` (Jobs, one list of jobs
// a node) and `gpumemctl jobs JOBID -o json` (Job, one job's samples a node).
type NodesDoc[Node any] struct {
	Version int    `json:"version"`
	Nodes   []Node `json:"nodes"`
}

// NewJobs is jobs' document.
func NewJobs[Node any](nodes []Node) NodesDoc[Node] {
	return NodesDoc[Node]{Jobs.Current, orEmpty(nodes)}
}

// NewJob is jobs JOBID's document; no node that has the job is null, as it always was.
func NewJob[Node any](nodes []Node) NodesDoc[Node] { return NodesDoc[Node]{Job.Current, nodes} }

// MIGStatusDoc is `gpumemctl mig status -o json` (MIGStatus).
type MIGStatusDoc[GPU any] struct {
	Version int   `json:"version"`
	GPUs    []GPU `json:"gpus"`
	Differ  int   `json:"not_as_desired"` // GPUs whose layout is not the desired one
}

// NewMIGStatus is mig status's document.
func NewMIGStatus[GPU any](gpus []GPU, differ int) MIGStatusDoc[GPU] {
	return MIGStatusDoc[GPU]{MIGStatus.Current, gpus, differ}
}

// ReportDoc is `gpumemctl report -o json` (Report): GiB·h per row, from Start to End
// (Unix seconds).
type ReportDoc[Row any] struct {
	Version int    `json:"version"`
	Start   int64  `json:"start_unix"`
	End     int64  `json:"end_unix"`
	Unit    string `json:"unit"`
	Rows    []Row  `json:"rows"`
}

// NewReport is report's document, in GiB*h.
func NewReport[Row any](start, end int64, rows []Row) ReportDoc[Row] {
	return ReportDoc[Row]{Report.Current, start, end, "GiB*h", rows}
}

// SteerReportDoc is `gpumemctl steer report -o json` (SteerReport), in shards.
type SteerReportDoc struct {
	Version  int        `json:"version"`
	Running  int        `json:"running_shard_uses"`
	Pending  int        `json:"pending_shard_jobs"`
	Free     int64      `json:"free_shards"`
	Stranded int64      `json:"stranded_shards"`
	GPUs     []SteerGPU `json:"gpus"`
}

// SteerGPU is one GPU of a steer report.
type SteerGPU struct {
	Node string `json:"node"`
	GPU  int    `json:"gpu"`
	Used int64  `json:"used"`
	Free int64  `json:"free"`
}

// NewSteerReport is steer report's document, its GPUs to be appended.
func NewSteerReport(running, pending int, free, stranded int64) SteerReportDoc {
	return SteerReportDoc{Version: SteerReport.Current, Running: running, Pending: pending, Free: free, Stranded: stranded}
}

// QuotaDoc is `gpumemctl quota -o json` (Quota): the job and every quota over it.
type QuotaDoc struct {
	Version int         `json:"version"`
	Job     string      `json:"job_id"`
	User    string      `json:"user"`
	Account string      `json:"account"`
	QOS     string      `json:"qos"`
	State   string      `json:"state"`
	Reason  string      `json:"reason"`
	NeedGiB int64       `json:"need_gib"`
	Quotas  []QuotaLine `json:"quotas"`
}

// NewQuota is quota's document for a job that needs needGiB, its quotas to be added.
func NewQuota(job, user, account, qos, state, reason string, needGiB int64) QuotaDoc {
	return QuotaDoc{Version: Quota.Current, Job: job, User: user, Account: account, QOS: qos, State: state, Reason: reason, NeedGiB: needGiB}
}

// QuotaLine is one quota over a job, and whether the job fits it.
type QuotaLine struct {
	What    string `json:"quota"`
	SizeGiB int64  `json:"size_gib"`
	HeldGiB int64  `json:"held_gib"`
	LeftGiB int64  `json:"left_gib"`
	Verdict string `json:"verdict"` // fits, waits or never
}

// UsedDoc is `gpumemctl used -o json` (Used).
type UsedDoc[Job any] struct {
	Version int   `json:"version"`
	Jobs    []Job `json:"jobs"`
}

// NewUsed is used's document.
func NewUsed[Job any](jobs []Job) UsedDoc[Job] { return UsedDoc[Job]{Used.Current, orEmpty(jobs)} }

// WhyDoc is `gpumemctl why -o json` (Why): the job as Slurm names it, the explanation's
// own fields beside those, and notes on what could not be read.
type WhyDoc[Explanation any] struct {
	Version     int    `json:"version"`
	Job         string `json:"job_id"`
	User        string `json:"user"`
	State       string `json:"state"`
	Reason      string `json:"slurm_reason"`
	Explanation Explanation
	Notes       []string `json:"notes,omitempty"`
}

// NewWhy is why's document.
func NewWhy[Explanation any](job, user, state, reason string, e Explanation, notes []string) WhyDoc[Explanation] {
	return WhyDoc[Explanation]{Why.Current, job, user, state, reason, e, notes}
}

// MarshalJSON writes the explanation's fields among the document's own, as an embedded
// struct's would be (a type parameter cannot be embedded).
func (d WhyDoc[Explanation]) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Version int    `json:"version"`
		Job     string `json:"job_id"`
		User    string `json:"user"`
		State   string `json:"state"`
		Reason  string `json:"slurm_reason"`
	}{d.Version, d.Job, d.User, d.State, d.Reason})
	if err != nil {
		return nil, err
	}
	e, err := json.Marshal(d.Explanation)
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(struct {
		Notes []string `json:"notes,omitempty"`
	}{d.Notes})
	if err != nil {
		return nil, err
	}
	return joinObjects(head, e, tail)
}

// joinObjects is one JSON object with the members of each of objs, in order.
func joinObjects(objs ...[]byte) ([]byte, error) {
	out := []byte{'{'}
	for _, o := range objs {
		o = bytes.TrimSpace(o)
		if len(o) < 2 || o[0] != '{' || o[len(o)-1] != '}' {
			return nil, fmt.Errorf("versioned: %.20q is no JSON object", o)
		}
		members := bytes.TrimSpace(o[1 : len(o)-1])
		if len(members) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, members...)
	}
	return append(out, '}'), nil
}

// orEmpty is xs, or an empty list where it is nil: a list of nothing is [], never null.
func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
