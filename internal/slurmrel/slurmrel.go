// Package slurmrel holds what gpumem knows of each Slurm release: which releases it
// builds for and tests on, where the lab gets each one, and the gates, the things that
// change at one release (releases.txt, the one home of those facts).
package slurmrel

import (
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

//go:embed releases.txt
var table string

// Table is the release table gpumem ships (releases.txt), read once.
var Table = sync.OnceValue(func() *Releases {
	r, err := Parse(table)
	if err != nil {
		panic("slurmrel: releases.txt: " + err.Error()) // a unit test reads it first
	}
	return r
})

// Releases is a release table: its rows in release order, and its gates.
type Releases struct {
	Rows  []Release
	Gates []Gate
}

// Release is one row: a major.minor release and where the lab gets it.
type Release struct {
	Name    string // major.minor: 25.11
	Version Version
	// Suite is the Debian suite of the lab's root; Tag, for a release built from
	// source, SchedMD's tag (slurm-25-11-7-1), else "".
	Suite, Tag string
	Ports      int // the lab's port block (slurmctld at Ports+17)
	Prometheus int // the lab's Prometheus port
	Auth       string
	Records    bool // job-record offsets measured (cgo/include/gpumem_jobrec.h)
	CI         bool // make test runs it
	// HostPorts and HostPrometheus, where set, are the lab's on a machine of Suite,
	// which runs this release's Slurm itself.
	HostPorts, HostPrometheus int
}

// FromSource says whether the lab builds this release from SchedMD's source.
func (r Release) FromSource() bool { return r.Tag != "" }

// SourceVersion is the micro release of Tag (slurm-25-11-7-1 is 25.11.7); zero for a
// Debian release.
func (r Release) SourceVersion() Version {
	v, _ := tagVersion(r.Tag) // Parse checked it
	return v
}

// Gate is something that changes at one Slurm release, from Since on.
type Gate struct {
	Name  string
	Since Version
	What  string
}

// Lookup finds the row of a major.minor release ("25.11") or of any micro release of
// it ("25.11.3", "slurm 25.11.3"). Its error names the table's releases.
func (t *Releases) Lookup(s string) (Release, error) {
	v, err := ParseVersion(s)
	if err == nil {
		for _, r := range t.Rows {
			if r.Version.Major == v.Major && r.Version.Minor == v.Minor {
				return r, nil
			}
		}
	}
	return Release{}, fmt.Errorf("Slurm %s is not in gpumem's release table (internal/slurmrel/releases.txt): it knows %s; a new release is one row there (see the README)", strings.TrimSpace(s), strings.Join(t.Names(), ", "))
}

// Names are the table's releases, oldest first.
func (t *Releases) Names() []string {
	var n []string
	for _, r := range t.Rows {
		n = append(n, r.Name)
	}
	return n
}

// Has says whether release v has gate name: v is that gate's release or later. The
// zero Version stands for a current Slurm, which has every gate. An unknown name
// panics: gates are named in code, and a misspelt one must fail its tests.
func (t *Releases) Has(v Version, name string) bool {
	for _, g := range t.Gates {
		if g.Name == name {
			return v == (Version{}) || !v.Before(g.Since)
		}
	}
	panic("slurmrel: no gate " + strconv.Quote(name))
}

// Parse reads a release table: release rows and gate lines, # comments.
func Parse(text string) (*Releases, error) {
	t := &Releases{}
	for i, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var err error
		if f[0] == "gate" {
			err = t.gate(f)
		} else {
			err = t.row(f)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("no release rows")
	}
	slices.SortFunc(t.Rows, func(a, b Release) int { return a.Version.Compare(b.Version) })
	return t, nil
}

func (t *Releases) gate(f []string) error {
	if len(f) < 4 {
		return fmt.Errorf("a gate is: gate NAME SINCE WHAT")
	}
	v, err := ParseVersion(f[2])
	if err != nil || strings.Count(f[2], ".") != 2 {
		return fmt.Errorf("gate %s: since %q: want a micro release such as 24.05.0", f[1], f[2])
	}
	for _, g := range t.Gates {
		if g.Name == f[1] {
			return fmt.Errorf("gate %s twice", f[1])
		}
	}
	what := strings.Join(f[3:], " ")
	if !isWord(f[1]) || strings.Contains(what, "*/") {
		return fmt.Errorf("gate %q: want a name of a-z, 0-9 and -, and words without */ (they go into a C comment)", f[1])
	}
	t.Gates = append(t.Gates, Gate{Name: f[1], Since: v, What: what})
	return nil
}

func (t *Releases) row(f []string) error {
	if len(f) != 7 && len(f) != 8 {
		return fmt.Errorf("release %s: want release, from, ports, prom, auth, records, ci and an optional host (%d fields)", f[0], len(f))
	}
	r := Release{Name: f[0]}
	v, err := ParseVersion(f[0])
	if err != nil || strings.Count(f[0], ".") != 1 || v.String() != f[0]+".0" {
		return fmt.Errorf("release %q: want major.minor, such as 25.11", f[0])
	}
	r.Version = v
	for _, o := range t.Rows {
		if o.Name == r.Name {
			return fmt.Errorf("release %s twice", r.Name)
		}
	}
	switch kind, where, _ := strings.Cut(f[1], ":"); kind {
	case "debian":
		r.Suite = where
	case "source":
		r.Tag, r.Suite, _ = strings.Cut(where, "@")
		if tv, err := tagVersion(r.Tag); err != nil || tv.Major != v.Major || tv.Minor != v.Minor {
			return fmt.Errorf("release %s: %q is not a SchedMD tag of %s (such as slurm-%d-%02d-1-1)", r.Name, r.Tag, r.Name, v.Major, v.Minor)
		}
	default:
		return fmt.Errorf("release %s: from %q: want debian:SUITE or source:TAG@SUITE", r.Name, f[1])
	}
	if !isWord(r.Suite) {
		return fmt.Errorf("release %s: from %q: no Debian suite", r.Name, f[1])
	}
	if r.Ports, err = block(f[2]); err != nil {
		return fmt.Errorf("release %s: ports: %w", r.Name, err)
	}
	if r.Prometheus, err = port(f[3]); err != nil {
		return fmt.Errorf("release %s: prom: %w", r.Name, err)
	}
	if r.Auth = f[4]; r.Auth != "munge" && r.Auth != "slurm" {
		return fmt.Errorf("release %s: auth %q: want munge or slurm", r.Name, f[4])
	}
	if r.Auth == "slurm" && v.Before(Version{23, 11, 0}) {
		return fmt.Errorf("release %s: auth/slurm came with 23.11", r.Name)
	}
	switch f[5] {
	case "measured":
		r.Records = true
	case "none":
	default:
		return fmt.Errorf("release %s: records %q: want measured or none", r.Name, f[5])
	}
	switch f[6] {
	case "yes":
		r.CI = !r.FromSource()
		if !r.CI {
			return fmt.Errorf("release %s: ci yes: CI has no source trees, only Debian's releases", r.Name)
		}
	case "no":
	default:
		return fmt.Errorf("release %s: ci %q: want yes or no", r.Name, f[6])
	}
	if len(f) == 8 {
		b, p, ok := strings.Cut(f[7], "/")
		if r.HostPorts, err = block(b); err == nil && ok {
			r.HostPrometheus, err = port(p)
		} else if err == nil {
			err = fmt.Errorf("want BLOCK/PROM")
		}
		if err != nil {
			return fmt.Errorf("release %s: host %q: %w", r.Name, f[7], err)
		}
	}
	for _, o := range t.Rows {
		for _, a := range []int{r.Ports, r.HostPorts} {
			if a != 0 && (a == o.Ports || a == o.HostPorts) {
				return fmt.Errorf("release %s: port block %d is %s's too", r.Name, a, o.Name)
			}
		}
		for _, a := range []int{r.Prometheus, r.HostPrometheus} {
			if a != 0 && (a == o.Prometheus || a == o.HostPrometheus) {
				return fmt.Errorf("release %s: Prometheus port %d is %s's too", r.Name, a, o.Name)
			}
		}
	}
	t.Rows = append(t.Rows, r)
	return nil
}

// block reads a port block: a multiple of 100 whose ports (block+6 to block+99) are
// unprivileged ports.
func block(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n%100 != 0 || n < 1100 || n > 65400 {
		return 0, fmt.Errorf("%q: want a multiple of 100 from 1100 to 65400", s)
	}
	return n, nil
}

func port(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1024 || n > 65535 {
		return 0, fmt.Errorf("%q: want a port from 1024 to 65535", s)
	}
	return n, nil
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// tagVersion reads SchedMD's tag names: slurm-25-11-7-1 is 25.11.7.
func tagVersion(tag string) (Version, error) {
	p := strings.Split(strings.TrimPrefix(tag, "slurm-"), "-")
	if !strings.HasPrefix(tag, "slurm-") || len(p) != 4 {
		return Version{}, fmt.Errorf("tag %q: want slurm-MAJOR-MINOR-MICRO-N", tag)
	}
	return ParseVersion(p[0] + "." + p[1] + "." + p[2])
}

// The gates Go code asks about (releases.txt says what each changes).
const (
	MultipleFiles     = "multiple-files"
	TypedShards       = "typed-shards"
	GPUsExclusive     = "gpus-exclusive"
	CgroupSLUID       = "cgroup-sluid"
	PrologRunInJob    = "prolog-runinjob"
	EpilogAsRoot      = "epilog-as-root"
	UpdateSwapsGRES   = "update-swaps-gres"
	TRESGresSlash     = "tres-gres-slash"
	TRESPerTask       = "tres-per-task"
	GresStateSaved    = "gres-state-saved"
	JobModifyErrMsg   = "jobmodify-errmsg"
	SacctmgrKeepsCase = "sacctmgr-keeps-case"
)

// Since is the release a gate comes with; an unknown name panics, as in Has.
func (t *Releases) Since(name string) Version {
	for _, g := range t.Gates {
		if g.Name == name {
			return g.Since
		}
	}
	panic("slurmrel: no gate " + strconv.Quote(name))
}
