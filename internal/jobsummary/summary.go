// Package jobsummary is what a gpu:mem job used, written by the node's gpumemd at the
// end of the job into Slurm's AdminComment, where the user reads it with sacct (through
// slurmdbd, so it outlives the node) and with `gpumemctl used`. It holds the one format
// of that summary (an AdminComment token per node), how the token joins an
// AdminComment that holds other text (an admin's note, another tool's summary: kept),
// and how a summary reads to a user, in the terms of seff and jobstats.
//
// Pure: no I/O. The token carries only numbers and gpumem's own words (never a job's
// name or anything else its user chose), is bounded in size, and is versioned.
package jobsummary

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slicekind"
	"github.com/gpumem/gpumem/internal/versioned"
)

// Bounds of one token: a node's GPUs kept, and the points of the memory-over-time
// series. A job on more GPUs of one node keeps its first MaxGPUs (and says so).
const (
	MaxGPUs   = 16
	MaxSeries = 32
	// maxToken bounds what Parse reads of one token, far above what Encode writes
	// (about 700 bytes at the bounds above).
	maxToken = 2048
	// MaxComment is the most of an AdminComment that Merge and ParseComment read;
	// a longer one is left as it is (Merge refuses to write).
	MaxComment = 64 << 10
)

// prefix starts every token: "gpumem/" and the format's version.
const prefix = "gpumem/"

// Summary is one job's GPU memory on one node.
type Summary struct {
	Version int    `json:"version"` // versioned.JobSummary; Encode writes Current
	Node    string `json:"node"`    // the node's Slurm name
	Kind    string `json:"kind"`    // slice kind: shard, mig or gpu (whole GPUs)
	Seconds int64  `json:"seconds"` // how long gpumemd watched the job on this node
	// OverSeconds is how long it held more than its slice (or memory on a GPU it was
	// not given), as polls saw it.
	OverSeconds int64 `json:"over_seconds"`
	Warnings    int   `json:"warnings"`            // times it was told it was over its slice
	Kills       int   `json:"kills"`               // times its GPU processes were killed for it
	MoreGPUs    bool  `json:"more_gpus,omitempty"` // it had more than MaxGPUs GPUs here; GPUs lists the first
	GPUs        []GPU `json:"gpus"`
	// Series is the job's GPU memory on this node over time (all its GPUs summed), in
	// MiB: each point the highest use within an equal share of its run, oldest first.
	Series []int64 `json:"memory_mib_over_time,omitempty"`
}

// GPU is one GPU of the job on the node, sizes in MiB.
type GPU struct {
	Index    int   `json:"index"`     // NVML index on the node
	SliceMiB int64 `json:"slice_mib"` // what Slurm gave the job on this GPU
	PeakMiB  int64 `json:"peak_mib"`
	MeanMiB  int64 `json:"mean_mib"`
}

// nodeOK is Slurm's node-name alphabet, as far as a token may carry it: a name with
// anything else is refused (Encode) rather than written.
func nodeOK(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

var kinds = map[string]bool{slicekind.Shard: true, slicekind.MIG: true, slicekind.GPU: true}

// Encode writes s as one AdminComment token: no spaces, at most about 700 bytes.
func Encode(s Summary) (string, error) {
	if !nodeOK(s.Node) {
		return "", fmt.Errorf("job summary: node name %q: want 1 to 64 of a-z A-Z 0-9 - _ .", s.Node)
	}
	if !kinds[s.Kind] {
		return "", fmt.Errorf("job summary: slice kind %q: want shard, mig or gpu", s.Kind)
	}
	gpus, more := s.GPUs, s.MoreGPUs
	if len(gpus) > MaxGPUs {
		gpus, more = gpus[:MaxGPUs], true
	}
	b := make([]byte, 0, 256)
	b = append(b, prefix...)
	b = strconv.AppendInt(b, int64(versioned.JobSummary.Current), 10)
	field := func(k string, v int64) {
		b = append(b, ';')
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, ";node="...)
	b = append(b, s.Node...)
	b = append(b, ";kind="...)
	b = append(b, s.Kind...)
	field("secs", max(s.Seconds, 0))
	field("over", max(s.OverSeconds, 0))
	field("warn", int64(max(s.Warnings, 0)))
	field("kill", int64(max(s.Kills, 0)))
	if more {
		field("more", 1)
	}
	for _, g := range gpus {
		b = append(b, ";gpu="...)
		for i, v := range []int64{int64(g.Index), g.SliceMiB, g.PeakMiB, g.MeanMiB} {
			if i > 0 {
				b = append(b, ':')
			}
			b = strconv.AppendInt(b, max(v, 0), 10)
		}
	}
	if len(s.Series) > 0 {
		b = append(b, ";mem="...)
		for i, v := range Downsample(s.Series, MaxSeries) {
			if i > 0 {
				b = append(b, '.')
			}
			b = strconv.AppendInt(b, max(v, 0), 10)
		}
	}
	return string(b), nil
}

// Downsample keeps at most n points of xs, each the largest of an equal share of them,
// so a peak is never smoothed away.
func Downsample(xs []int64, n int) []int64 {
	if len(xs) <= n || n <= 0 {
		return xs
	}
	out := make([]int64, n)
	for i := range n {
		lo, hi := i*len(xs)/n, (i+1)*len(xs)/n
		m := xs[lo]
		for _, v := range xs[lo:hi] {
			m = max(m, v)
		}
		out[i] = m
	}
	return out
}

// ErrNotSummary is returned (wrapped) for a token that is not gpumem's.
var ErrNotSummary = errors.New("not a gpumem job summary")

// Parse reads one token that Encode wrote (this release's version or an older one
// it reads). Every number is bounded; a token it cannot read whole is refused whole.
func Parse(tok string) (Summary, error) {
	var s Summary
	if !strings.HasPrefix(tok, prefix) {
		return s, ErrNotSummary
	}
	if len(tok) > maxToken {
		return s, fmt.Errorf("job summary: %d bytes, more than %d", len(tok), maxToken)
	}
	fields := strings.Split(tok[len(prefix):], ";")
	v, err := strconv.Atoi(fields[0])
	if err != nil {
		return s, fmt.Errorf("job summary: version %q is not a number", fields[0])
	}
	if err := versioned.JobSummary.Check(v); err != nil {
		return s, err
	}
	s.Version = v
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return Summary{}, fmt.Errorf("job summary: field %q has no =", f)
		}
		if seen[k] && k != "gpu" {
			return Summary{}, fmt.Errorf("job summary: field %s given twice", k)
		}
		seen[k] = true
		if err := s.set(k, val); err != nil {
			return Summary{}, fmt.Errorf("job summary: %s: %w", k, err)
		}
	}
	switch {
	case s.Node == "":
		return Summary{}, errors.New("job summary: no node")
	case s.Kind == "":
		return Summary{}, errors.New("job summary: no slice kind")
	}
	return s, nil
}

// maxNumber bounds every number a token carries: more than any GPU's MiB or any job's
// seconds, and far from overflowing a sum of a few of them.
const maxNumber = 1 << 40

func number(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > maxNumber || v != strconv.FormatInt(n, 10) {
		return 0, fmt.Errorf("%q is not a whole number from 0 to %d", v, int64(maxNumber))
	}
	return n, nil
}

func (s *Summary) set(k, v string) error {
	var err error
	switch k {
	case "node":
		if !nodeOK(v) {
			return fmt.Errorf("%q is not a node name", v)
		}
		s.Node = v
	case "kind":
		if !kinds[v] {
			return fmt.Errorf("%q is not shard, mig or gpu", v)
		}
		s.Kind = v
	case "secs":
		s.Seconds, err = number(v)
	case "over":
		s.OverSeconds, err = number(v)
	case "warn", "kill":
		var n int64
		if n, err = number(v); err == nil && n > 1<<20 {
			err = fmt.Errorf("%d is too many", n)
		}
		if k == "warn" {
			s.Warnings = int(n)
		} else {
			s.Kills = int(n)
		}
	case "more":
		s.MoreGPUs = v == "1"
	case "gpu":
		if len(s.GPUs) >= MaxGPUs {
			return fmt.Errorf("more than %d GPUs", MaxGPUs)
		}
		parts := strings.Split(v, ":")
		if len(parts) != 4 {
			return fmt.Errorf("%q: want index:slice:peak:mean", v)
		}
		var ns [4]int64
		for i, p := range parts {
			if ns[i], err = number(p); err != nil {
				return err
			}
		}
		s.GPUs = append(s.GPUs, GPU{Index: int(min(ns[0], 1<<16)), SliceMiB: ns[1], PeakMiB: ns[2], MeanMiB: ns[3]})
	case "mem":
		parts := strings.Split(v, ".")
		if len(parts) > MaxSeries {
			return fmt.Errorf("%d points, more than %d", len(parts), MaxSeries)
		}
		for _, p := range parts {
			n, err := number(p)
			if err != nil {
				return err
			}
			s.Series = append(s.Series, n)
		}
	default:
		// A field of a newer writer of the same version would be a bug there; refuse
		// it rather than show a summary that leaves something out.
		return errors.New("unknown field")
	}
	return err
}
