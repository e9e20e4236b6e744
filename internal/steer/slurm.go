package steer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// This file reads what scontrol and squeue print. It does no I/O: gpumemctl runs the
// commands and passes their output, so the parsing is tested on recorded output.

// SlurmNode is what steering reads of one node from `scontrol -o show node`.
type SlurmNode struct {
	Name   string
	Weight uint32
}

var (
	nodeNameRe = regexp.MustCompile(`(?:^|\s)NodeName=(\S+)`)
	weightRe   = regexp.MustCompile(`\sWeight=(\d+)`)
)

// ParseNodes reads `scontrol -o show node`: one node a line.
func ParseNodes(out string) ([]SlurmNode, error) {
	var nodes []SlurmNode
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, w := nodeNameRe.FindStringSubmatch(line), weightRe.FindStringSubmatch(line)
		if name == nil || w == nil {
			return nil, fmt.Errorf("scontrol show node, line %d: no NodeName= or Weight= in %q; want the one-line output of `scontrol -o show node`", i+1, clip(line))
		}
		weight, err := strconv.ParseUint(w[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("scontrol show node, node %s: weight %q: %v", name[1], w[1], err)
		}
		nodes = append(nodes, SlurmNode{Name: name[1], Weight: uint32(weight)})
	}
	return nodes, nil
}

// Use is shards, or whole GPUs, a running job holds on one GPU of one node.
type Use struct {
	Node   string
	GPU    int   // GRES index on the node: the order of its gres.conf lines, NVML order
	Shards int64 // 0 when Whole
	Whole  bool  // the GPU is taken as a gpu GRES
}

var (
	jobStateRe = regexp.MustCompile(`(?:^|\s)JobState=(\S+)`)
	// One node's detail in `scontrol -d show job`, e.g. Nodes=n1 CPU_IDs=0 Mem=0
	// GRES=shard:20(20/80,0/80) (24.11: the job's shards on each GPU of the node, over
	// what the GPU has) or GRES=shard:20(IDX:0), gpu:h100:1(IDX:1) (GPU indices).
	detailRe = regexp.MustCompile(`(?:^|\s)Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=(\S*)`)
	gresRe   = regexp.MustCompile(`(?:^|,)(?:gres/)?(gpu|shard)(?::[^:,(]+)?:(\d+)\(([^)]*)\)`)
)

// ParseJobs reads `scontrol -d -o show job` and returns the GPU use of running jobs.
func ParseJobs(out string) ([]Use, error) {
	var uses []Use
	err := eachRunningJob(out, func(_ string, u []Use) { uses = append(uses, u...) })
	if err != nil {
		return nil, err
	}
	return uses, nil
}

// JobUses reads `scontrol -d -o show job` like ParseJobs, by job id: every running
// (or completing, or suspended) job has an entry, empty when it holds no GPU. A job
// that is not there has ended or never ran. Lines without a JobId= are left out.
func JobUses(out string) (map[string][]Use, error) {
	jobs := map[string][]Use{}
	err := eachRunningJob(out, func(id string, u []Use) {
		if id != "" {
			jobs[id] = append(jobs[id], u...)
		}
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

var jobIDRe = regexp.MustCompile(`(?:^|\s)JobId=(\d+)`)

// eachRunningJob calls f with the id ("" when the line has none) and GPU use of each
// job that holds its allocation, in the order scontrol printed them.
func eachRunningJob(out string, f func(id string, uses []Use)) error {
	for _, line := range strings.Split(out, "\n") {
		st := jobStateRe.FindStringSubmatch(line)
		if st == nil || st[1] != "RUNNING" && st[1] != "COMPLETING" && st[1] != "SUSPENDED" {
			continue
		}
		var id string
		if m := jobIDRe.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
		var uses []Use
		for _, m := range detailRe.FindAllStringSubmatch(line, -1) {
			nodes, err := expandHosts(m[1])
			if err != nil {
				return err
			}
			for _, g := range gresRe.FindAllStringSubmatch(m[2], -1) {
				per, err := perGPU(g[1] == "gpu", g[2], g[3])
				if err != nil {
					return fmt.Errorf("scontrol show job: GRES %q: %v", m[2], err)
				}
				for _, n := range nodes {
					for _, u := range per {
						u.Node = n
						uses = append(uses, u)
					}
				}
			}
		}
		f(id, uses)
	}
	return nil
}

// perGPU reads the parenthesised part of one GRES of a job's node detail.
func perGPU(whole bool, count, detail string) ([]Use, error) {
	if list, ok := strings.CutPrefix(detail, "IDX:"); ok {
		if list == "N/A" || list == "" {
			return nil, nil // 22.05 prints "(IDX:)" for a type the job took none of
		}
		idx, err := expandRanges(list)
		if err != nil {
			return nil, err
		}
		n, _ := strconv.ParseInt(count, 10, 64)
		out := make([]Use, len(idx))
		for j, i := range idx {
			out[j] = Use{GPU: i, Whole: whole}
			if !whole {
				// A job's shards on a node come from one GPU unless the site allows
				// more; an even split is the best reading of an index list.
				out[j].Shards = n / int64(len(idx))
			}
		}
		return out, nil
	}
	var out []Use
	for i, part := range strings.Split(detail, ",") {
		took, _, ok := strings.Cut(part, "/")
		n, err := strconv.ParseInt(took, 10, 64)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("per-GPU use %q; want TAKEN/TOTAL or IDX:LIST", part)
		}
		if n > 0 {
			out = append(out, Use{GPU: i, Shards: n, Whole: whole})
		}
	}
	return out, nil
}

var shardReqRe = regexp.MustCompile(`(?:^|[,/:])shard(?::([^:,]+))?:(\d+)(?:$|,)`)

// PendingFormat is the squeue -o format ParsePending reads (priority order, as squeue
// sorts pending jobs by default): id, partitions, TRES per node, required nodes, submit
// time. The first three alone are read too.
const PendingFormat = "%i|%P|%b|%n|%V"

// Pending is one pending job that asks for shards.
type Pending struct {
	ID         string
	Partitions []string
	Shards     int64
	Type       string    // the shard Type asked for, "" for any
	ReqNodes   string    // the required node list, "" for none
	Submitted  time.Time // zero when not read
}

// gpuTypeRe is the form of a per-GPU type (shard.TypeName): model, _g, NVML index.
var gpuTypeRe = regexp.MustCompile(`^.+_g\d+$`)

// Pinned reports whether the job asks for shards of one per-GPU type on one required
// node, as job_submit pins a job with ShardTypes = per-gpu.
func (p Pending) Pinned() bool {
	return gpuTypeRe.MatchString(p.Type) && p.ReqNodes != "" && !strings.ContainsAny(p.ReqNodes, ",[")
}

// ParsePending reads `squeue -h -t PD -o PendingFormat` (or '%i|%P|%b'), with submit
// times in loc. Jobs that ask no shards are left out.
func ParsePending(out string, loc *time.Location) ([]Pending, error) {
	var jobs []Pending
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 3 && len(f) != 5 {
			return nil, fmt.Errorf("squeue, line %d: %q; want JOBID|PARTITIONS|TRES_PER_NODE[|REQ_NODES|SUBMIT_TIME] from -o '%s'", i+1, clip(line), PendingFormat)
		}
		m := shardReqRe.FindStringSubmatch(strings.TrimSpace(f[2]))
		if m == nil {
			continue
		}
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("squeue, job %s: shard count %q; want a positive integer", f[0], m[2])
		}
		p := Pending{ID: strings.TrimSpace(f[0]), Partitions: strings.Split(strings.TrimSpace(f[1]), ","), Shards: n, Type: m[1]}
		if len(f) == 5 {
			if p.ReqNodes = strings.TrimSpace(f[3]); p.ReqNodes == "(null)" {
				p.ReqNodes = ""
			}
			if p.Submitted, err = time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(f[4]), loc); err != nil {
				return nil, fmt.Errorf("squeue, job %s: submit time %q; want YYYY-MM-DDTHH:MM:SS", f[0], f[4])
			}
		}
		jobs = append(jobs, p)
	}
	return jobs, nil
}

// Unpin returns the pinned jobs (Pending.Pinned) submitted more than after before now,
// in queue order: a pin that has not started its job by then is taken back, so that it
// never holds a job longer than that.
func Unpin(pending []Pending, now time.Time, after time.Duration) []Pending {
	var out []Pending
	for _, p := range pending {
		if p.Pinned() && !p.Submitted.IsZero() && now.Sub(p.Submitted) > after {
			out = append(out, p)
		}
	}
	return out
}

// expandHosts expands a Slurm host list such as n[1-3,5],gpu7.
func expandHosts(list string) ([]string, error) {
	var out []string
	for list != "" {
		end := strings.IndexAny(list, ",[")
		if end < 0 {
			return append(out, list), nil
		}
		if list[end] == ',' {
			out = append(out, list[:end])
			list = list[end+1:]
			continue
		}
		closing := strings.IndexByte(list[end:], ']')
		if closing < 0 {
			return nil, fmt.Errorf("host list %q: unclosed [", list)
		}
		prefix, body := list[:end], list[end+1:end+closing]
		list = strings.TrimPrefix(list[end+closing+1:], ",")
		for _, part := range strings.Split(body, ",") {
			a, b, err := bounds(part)
			if err != nil {
				return nil, fmt.Errorf("host list %s[%s]: %v", prefix, body, err)
			}
			width, _, _ := strings.Cut(part, "-")
			for i := a; i <= b; i++ {
				// Keep zero padding: n[01-03] names n01, not n1.
				out = append(out, prefix+fmt.Sprintf("%0*d", len(width), i))
			}
		}
	}
	return out, nil
}

// expandRanges expands a GRES index list such as 0-1,3.
func expandRanges(list string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(list, ",") {
		a, b, err := bounds(part)
		if err != nil {
			return nil, err
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// bounds reads N or N-M.
func bounds(part string) (int, int, error) {
	lo, hi, _ := strings.Cut(part, "-")
	if hi == "" {
		hi = lo
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || b < a || a < 0 {
		return 0, 0, fmt.Errorf("range %q; want N or N-M with 0 <= N <= M", part)
	}
	return a, b, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
