package gresconf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmconf"
)

// Slurmd checks a candidate gres.conf with slurmd itself: `slurmd -G` parses
// slurm.conf and the gres.conf beside it and prints the GRES a node would register,
// without starting the daemon. The candidate is checked in a scratch directory, so the
// installed file is never touched.
type Slurmd struct {
	SlurmConf string       // the cluster's slurm.conf
	Nodes     []string     // nodes to check; each is checked as slurmd -N NODE would start
	Run       SlurmdRunner // nil: slurmcli.Slurmd{}, slurmd from PATH
}

// SlurmdRunner runs slurmd for a check: slurmcli.Slurmd, or a test's stand-in.
type SlurmdRunner interface {
	// Bin is the slurmd that will run; ErrNoSlurmd when there is none.
	Bin() (string, error)
	// Gres is all `slurmd -D -G -N node -f conf` printed, and how it ended.
	Gres(ctx context.Context, node, conf string) (string, error)
}

// ErrNoSlurmd means slurmd is not installed, so nothing could be checked.
var ErrNoSlurmd = slurmcli.ErrNoSlurmd

// Report is what slurmd said about one node.
type Report struct {
	Node   string
	Gres   []string // "Gres Name=..." lines
	Errors []string // lines slurmd flagged as errors
}

// Fatal lines make a candidate invalid; other errors (a device file that is not a
// device node in a test directory) are reported but do not block.
var fatalMarks = []string{"fatal:", "Invalid GRES", "Parse error", "Parsing error"}

// Check validates gres against every node; it fails on the first node slurmd rejects.
func (s Slurmd) Check(gres []byte) ([]Report, error) {
	run := s.Run
	if run == nil {
		run = slurmcli.Slurmd{}
	}
	if _, err := run.Bin(); err != nil {
		return nil, err
	}
	if s.SlurmConf == "" {
		return nil, fmt.Errorf("gres check: no slurm.conf given (--slurm-conf): slurmd -G needs the node definitions")
	}
	if len(s.Nodes) == 0 {
		return nil, fmt.Errorf("gres check: no node to check: name one (--node)")
	}
	// slurmd waits about 20 s for a missing device file before it gives up; say so
	// at once instead.
	if missing := missingFiles(gres); len(missing) > 0 {
		return nil, fmt.Errorf("gres check: device files missing: %s (wrong --dev-prefix, or the driver has not created them yet)", strings.Join(missing, ", "))
	}
	dir, err := os.MkdirTemp("", "gpumem-gres-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "slurm.conf")
	if err := copyConfDir(s.SlurmConf, dir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), gres, 0o644); err != nil {
		return nil, err
	}
	var reports []Report
	for _, node := range s.Nodes {
		r, err := check(run, conf, node)
		reports = append(reports, r)
		if err != nil {
			return reports, err
		}
	}
	return reports, nil
}

// beside are the files slurmd may read from slurm.conf's directory at start; without
// them it stops before it looks at gres.conf (24.11 with auth/slurm needs slurm.key,
// and cgroup.conf unless CgroupPlugin=disabled). Secrets keep their owner-only mode.
var beside = []struct {
	name string
	mode os.FileMode
}{
	{"cgroup.conf", 0o644}, {"acct_gather.conf", 0o644}, {"plugstack.conf", 0o644},
	{"topology.conf", 0o644}, {"job_container.conf", 0o644}, {"mpi.conf", 0o644},
	{"oci.conf", 0o644}, {"helpers.conf", 0o644}, {"slurm.key", 0o600},
}

// copyConfDir copies slurm.conf, the files it Includes by a name beside it (a missing
// one would hold slurmd for a minute of retries), and those of the files beside it that
// exist.
// Each is read as slurmconf reads its files (regular files only, bounded), so a FIFO or
// a huge file in /etc/slurm never blocks gpumemd.
func copyConfDir(slurmConf, dir string) error {
	read := slurmconf.Read
	b, err := read(slurmConf)
	if err != nil {
		return fmt.Errorf("gres check: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), privateLogs(b, dir), 0o644); err != nil {
		return err
	}
	for todo, seen := includes(b), map[string]bool{}; len(todo) > 0; todo = todo[1:] {
		name := todo[0]
		if seen[name] {
			continue
		}
		seen[name] = true
		inc, err := read(filepath.Join(filepath.Dir(slurmConf), name))
		if err != nil {
			return fmt.Errorf("gres check: slurm.conf includes %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), privateLogs(inc, dir), 0o644); err != nil {
			return err
		}
		todo = append(todo, includes(inc)...)
	}
	for _, f := range beside {
		b, err := read(filepath.Join(filepath.Dir(slurmConf), f.name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("gres check: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// includes are the files a slurm.conf text Includes by a name relative to its folder
// (what configless Slurm ships along); absolute ones are read where they are.
func includes(conf []byte) []string {
	var out []string
	for _, l := range strings.Split(string(conf), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.EqualFold(f[0], "include") && !strings.HasPrefix(f[1], "/") {
			out = append(out, f[1])
		}
	}
	return out
}

// check runs slurmd -G for one node and reads what it said.
func check(run SlurmdRunner, conf, node string) (Report, error) {
	out, runErr := run.Gres(context.Background(), node, conf)
	r := parseReport(node, out)
	if errors.Is(runErr, slurmcli.ErrNoAnswer) {
		return r, fmt.Errorf("gres check: %w", runErr)
	}
	var bad []string
	for _, l := range r.Errors {
		for _, m := range fatalMarks {
			if strings.Contains(l, m) {
				bad = append(bad, l)
				break
			}
		}
	}
	if runErr != nil || len(bad) > 0 {
		if len(bad) == 0 {
			bad = r.Errors
		}
		return r, fmt.Errorf("gres check: slurmd rejects the gres.conf for node %s (%v):\n  %s", node, runErr, strings.Join(bad, "\n  "))
	}
	return r, nil
}

func parseReport(node, out string) Report {
	r := Report{Node: node}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.Contains(l, "Gres Name="):
			r.Gres = append(r.Gres, l[strings.Index(l, "Gres Name="):])
		case strings.Contains(l, "error:") || strings.Contains(l, "fatal:"):
			r.Errors = append(r.Errors, l)
		}
	}
	return r
}

// missingFiles lists the File= and MultipleFiles= paths of gres that do not exist.
// Host-list forms like /dev/nvidia[0-3] are left to slurmd.
func missingFiles(gres []byte) []string {
	var missing []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(gres), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			if !strings.EqualFold(k, "File") && !strings.EqualFold(k, "MultipleFiles") {
				continue
			}
			for _, p := range strings.Split(v, ",") {
				if p == "" || seen[p] || strings.ContainsAny(p, "[]") {
					continue
				}
				seen[p] = true
				if _, err := os.Stat(p); err != nil {
					missing = append(missing, p)
				}
			}
		}
	}
	return missing
}

// privateLogs points slurm.conf's SlurmdLogFile into dir and keeps slurmd off syslog,
// so that a check never appends to the node's live slurmd log (or, with %n, creates one
// for a node it names), nor to the journal where slurm.conf names no log file. Each key
// is set once: where slurm.conf has it, else at the end.
func privateLogs(conf []byte, dir string) []byte {
	keys := []string{"slurmdlogfile", "slurmdsyslogdebug"}
	set := map[string]string{"slurmdlogfile": "SlurmdLogFile=" + filepath.Join(dir, "slurmd-%n.log"), "slurmdsyslogdebug": "SlurmdSyslogDebug=quiet"}
	lines := strings.Split(strings.TrimRight(string(conf), "\n"), "\n")
	done := map[string]bool{}
	for i, l := range lines {
		k, _, ok := strings.Cut(strings.TrimSpace(l), "=")
		if line, mine := set[strings.ToLower(strings.TrimSpace(k))]; ok && mine {
			lines[i] = line
			done[strings.ToLower(strings.TrimSpace(k))] = true
		}
	}
	for _, k := range keys {
		if !done[k] {
			lines = append(lines, set[k])
		}
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}
