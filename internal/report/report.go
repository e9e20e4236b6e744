// Package report sums GPU-memory hours (GiB·h) from Slurm's accounting: what each job
// held, as sacct records it, valued at the GiB equivalents of package accounting, over a
// period, per account, user and partition — the basis for billing by GPU memory.
//
// Pure: sacct's text comes in, figures go out.
package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// SacctFormat is the --format the parser reads, with sacct run as
// `SLURM_TIME_FORMAT=%s sacct -a -X -D -P -n --format=SacctFormat`: -D keeps every run
// of a requeued job (each held its GPUs), epoch times need no time zone.
const SacctFormat = "JobID,User,Account,Partition,AllocTRES,Start,End,State"

// Run is one run of one job as sacct records it.
type Run struct {
	JobID, User, Account, Partition, State string
	Start, End                             time.Time // End zero while it runs
	TRES                                   map[string]float64
}

// ParseSacct reads sacct's parsable output in SacctFormat. Runs that never started
// (pending, cancelled before start) are left out: they held nothing.
func ParseSacct(out string) ([]Run, error) {
	var runs []Run
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 8 {
			return nil, fmt.Errorf("sacct line %d: %d fields, want 8 (%s): %q", i+1, len(f), SacctFormat, line)
		}
		start, ok, err := epoch(f[5])
		if err != nil {
			return nil, fmt.Errorf("sacct line %d: start: %w", i+1, err)
		}
		if !ok {
			continue
		}
		end, _, err := epoch(f[6])
		if err != nil {
			return nil, fmt.Errorf("sacct line %d: end: %w", i+1, err)
		}
		tres, err := ParseTRES(f[4])
		if err != nil {
			return nil, fmt.Errorf("sacct line %d: %w", i+1, err)
		}
		state, _, _ := strings.Cut(f[7], " ") // "CANCELLED by 0"
		runs = append(runs, Run{JobID: f[0], User: f[1], Account: f[2], Partition: f[3], State: state,
			Start: start, End: end, TRES: tres})
	}
	return runs, nil
}

// epoch reads a time sacct printed with SLURM_TIME_FORMAT=%s; "Unknown", "None" and
// empty mean not (yet) set.
func epoch(s string) (time.Time, bool, error) {
	switch s {
	case "", "Unknown", "None":
		return time.Time{}, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%q is not epoch seconds (run sacct with SLURM_TIME_FORMAT=%%s)", s)
	}
	if n == 0 {
		return time.Time{}, false, nil
	}
	return time.Unix(n, 0), true, nil
}

// ParseTRES reads a TRES list such as "billing=20,cpu=1,gres/shard=20,mem=1000M,node=1".
// Counts with a unit suffix (memory) are kept as their number; only gres/ entries are
// ever valued.
func ParseTRES(s string) (map[string]float64, error) {
	m := map[string]float64{}
	if s == "" {
		return m, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("TRES %q: want NAME=COUNT entries", kv)
		}
		v = strings.TrimRight(v, "KMGTP")
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("TRES %q: count is not a number", kv)
		}
		m[k] = n
	}
	return m, nil
}

// GiB is the GPU memory a run held, valued by eq (TRES name -> GiB of one, as
// accounting.Equivalents gives it). A gres/gpu count with no valued typed entry beside it
// (a GPU type missing from AccountingStorageTRES or from the inventory) cannot be
// valued: ok is false and the caller says so.
func GiB(tres map[string]float64, eq map[string]float64) (gib float64, ok bool) {
	typedGPUs := 0.0
	for k, n := range tres {
		if w, found := eq[k]; found {
			gib += n * w
		}
		if name, typ, ok := slurmgres.CutTRES(k); ok && name == slurmgres.GPU && typ != "" {
			if _, found := eq[k]; found {
				typedGPUs += n
			}
		}
	}
	return gib, typedGPUs >= tres[slurmgres.TRES(slurmgres.GPU, "")]
}

// Row is one group's figures.
type Row struct {
	Account   string   `json:"account,omitempty"`
	User      string   `json:"user,omitempty"`
	Partition string   `json:"partition,omitempty"`
	Runs      int      `json:"runs"`
	AllocGiBh float64  `json:"alloc_gib_hours"`
	UsedGiBh  *float64 `json:"used_gib_hours,omitempty"` // only where gpumemd measured every run
	Unvalued  int      `json:"unvalued_runs,omitempty"`  // runs with GPUs GiB could not value
}

// Group names the keys rows are summed by: any of "account", "user", "partition".
type Group []string

// ParseGroup reads --by: a comma-separated subset of account,user,partition.
func ParseGroup(s string) (Group, error) {
	var g Group
	for _, k := range strings.Split(s, ",") {
		switch k {
		case "account", "user", "partition":
			g = append(g, k)
		default:
			return nil, fmt.Errorf("--by %q: want a comma-separated list of account, user, partition", s)
		}
	}
	return g, nil
}

func (g Group) key(r Run) Row {
	var row Row
	for _, k := range g {
		switch k {
		case "account":
			row.Account = r.Account
		case "user":
			row.User = r.User
		case "partition":
			row.Partition = r.Partition
		}
	}
	return row
}

// Used gives the GiB·h a run really held (from gpumemd's history), when measured.
type Used func(r Run, from, to time.Time) (gibHours float64, ok bool)

// Summarize sums the GiB·h each group's runs held within [from, to): a run's share is
// its GiB times the hours of it inside the period (a run still going counts up to now).
// Rows come sorted by their keys.
func Summarize(runs []Run, eq map[string]float64, g Group, from, to, now time.Time, used Used) []Row {
	rows := map[Row]*Row{}
	measured := map[Row]bool{}
	for _, r := range runs {
		end := r.End
		if end.IsZero() {
			end = now
		}
		s, e := later(r.Start, from), earlier(end, to)
		if !e.After(s) {
			continue
		}
		k := g.key(r)
		row := rows[k]
		if row == nil {
			row = new(Row)
			*row = k
			rows[k] = row
			measured[k] = used != nil
		}
		row.Runs++
		gib, ok := GiB(r.TRES, eq)
		if !ok {
			row.Unvalued++
		}
		row.AllocGiBh += gib * e.Sub(s).Hours()
		if measured[k] {
			if u, ok := used(r, s, e); ok {
				if row.UsedGiBh == nil {
					row.UsedGiBh = new(float64)
				}
				*row.UsedGiBh += u
			} else {
				measured[k] = false
			}
		}
	}
	out := make([]Row, 0, len(rows))
	for k, row := range rows {
		if !measured[k] {
			row.UsedGiBh = nil
		}
		out = append(out, *row)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		if a.User != b.User {
			return a.User < b.User
		}
		return a.Partition < b.Partition
	})
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
