package admit

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/request"
)

// refusal explains, partition by partition, why the request can never fit, what the
// largest request that fits there is, and which other partitions would take it.
func (a *Admitter) refusal(q *ask, cands []string) error {
	var b strings.Builder
	asked := request.GiB(q.mib) + " per GPU"
	if q.gpus > 1 {
		asked = strconv.FormatInt(q.gpus, 10) + " GPUs with " + request.GiB(q.mib) + " each"
		if !q.perJob {
			asked += " on one node"
		}
	}
	if q.model != "" {
		asked += " of type " + q.model
	}
	b.WriteString("gpumem: you asked for " + asked + ", but ")
	if len(cands) == 0 {
		b.WriteString("gpumem knows no partition with GPUs")
	}
	for i, name := range cands {
		if i > 0 {
			b.WriteString("; ")
		}
		p := a.parts[name]
		if p == nil {
			b.WriteString("partition " + name + " has no GPU node gpumem knows")
			continue
		}
		b.WriteString("the largest GPU in partition " + name + " has " + request.GiB(p.largest) + " (" + p.largestBy + ")")
		if m := a.largestFit(p, q); m > 0 {
			b.WriteString("; up to gpu:mem:" + request.FormatSize(m) + " per GPU fits there")
		} else if q.gpus > 1 {
			b.WriteString("; it has no " + strconv.FormatInt(q.gpus, 10) + " GPUs of one type")
			if !q.perJob {
				b.WriteString(" on one node")
			}
		}
	}
	var elsewhere []string
	for _, name := range a.names {
		if !contains(cands, name) && a.fits(q, name) {
			elsewhere = append(elsewhere, name)
		}
	}
	if len(elsewhere) > 0 {
		b.WriteString(". It fits in partition " + strings.Join(elsewhere, ", ") + " (--partition=" + elsewhere[0] + ")")
	}
	return errors.New(b.String())
}

// largestFit is the most memory per GPU that q's GPU count can get in p.
func (a *Admitter) largestFit(p *partition, q *ask) int64 {
	var m int64
	if q.gpus == 1 && q.model == "" {
		m = p.shardMiB
	}
	probe := *q
	probe.mib = 0
	for _, list := range [...][]slice{p.migs, p.wholes} {
		for i := range list {
			if enough(&list[i], &probe) {
				m = max(m, list[i].mib)
			}
		}
	}
	return m
}

func (a *Admitter) fits(q *ask, name string) bool {
	p := []*partition{a.parts[name]}
	for _, k := range [...]placement.Kind{placement.Shard, placement.MIG, placement.Whole} {
		if _, ok := a.serve(q, p, k); ok {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
