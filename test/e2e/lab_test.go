//go:build e2e

// Package e2e proves gpumem against a real Slurm: the lab that test/lab/lab.sh starts
// (LAB_SLURM=22.05 on the host, 24.11 and 26.05 in their chroots). Every test talks to the daemons
// only through Slurm's own commands, as a user would. Run through test/e2e.sh.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmrel"
)

// release is the lab under test (LAB_SLURM, a row of the release table); root is its
// chroot ("" for the host's Slurm) and promPort its Prometheus's port, as lab.sh puts
// them (`lab.sh where`).
var release, root, promPort, labID = labRelease()

func labRelease() (rel, root, prom, id string) {
	rel = os.Getenv("LAB_SLURM")
	for _, r := range slurmrel.Table().Rows {
		if rel == "" && r.HostPorts != 0 { // lab.sh's default: the host's own release
			rel = r.Name
		}
	}
	if _, err := slurmrel.Table().Lookup(rel); err != nil {
		panic("LAB_SLURM=" + rel + ": " + err.Error())
	}
	cmd := exec.Command("../lab/lab.sh", "where")
	cmd.Env = append(os.Environ(), "LAB_SLURM="+rel)
	out, err := cmd.Output()
	if err != nil {
		panic("lab.sh where: " + err.Error())
	}
	for _, l := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		switch k {
		case "root":
			root = v
		case "prometheus":
			prom = v
		case "id":
			id = v
		}
	}
	return rel, root, prom, id
}

// has says whether the lab's Slurm has a gate of the release table (a behaviour that
// changed at one release).
func has(gate string) bool {
	r, _ := slurmrel.Table().Lookup(release)
	return slurmrel.Table().Has(r.Version, gate)
}

// tresPrefix is how slurmctld prefixes --gres entries in tres_per_node on this release.
func tresPrefix() string {
	if !has(slurmrel.TRESGresSlash) {
		return "gres:"
	}
	return "gres/"
}

type result struct {
	out, err string
	code     int
	took     time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.code, r.took.Round(time.Millisecond), r.out, r.err)
}

// slurm runs a Slurm command in the lab (inside the chroot from 24.11 on), feeding stdin.
func slurm(t testing.TB, timeout time.Duration, stdin string, args ...string) result {
	t.Helper()
	if root != "" {
		args = append([]string{"chroot", root}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := result{out: out.String(), err: errOut.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s: still running after %v\n%s", strings.Join(args, " "), timeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return r
}

// ok runs a Slurm command that must succeed and returns its stdout.
func ok(t testing.TB, args ...string) string {
	t.Helper()
	r := slurm(t, 90*time.Second, "", args...)
	if r.code != 0 {
		t.Fatalf("%s: %s", strings.Join(args, " "), r)
	}
	return r.out
}

// hostPath is where a path inside the lab is on this machine.
func hostPath(p string) string { return root + p }

// ctldLogMark is how long the lab's slurmctld log is now: ctldLogSince reads what was
// written after it.
func ctldLogMark() int64 {
	if fi, err := os.Stat(ctldLogPath()); err == nil {
		return fi.Size()
	}
	return 0
}

// ctldLogSince is what slurmctld logged after mark.
func ctldLogSince(t testing.TB, mark int64) string {
	t.Helper()
	b, err := os.ReadFile(ctldLogPath())
	if err != nil {
		t.Fatal(err)
	}
	return string(b[min(mark, int64(len(b))):])
}

// ctldLogWait waits a few seconds for slurmctld to log a line with every one of parts
// after mark, and returns it ("" if none came).
func ctldLogWait(t testing.TB, mark int64, parts ...string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		for _, l := range strings.Split(ctldLogSince(t, mark), "\n") {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(l, p) }) {
				return l
			}
		}
		if time.Now().After(deadline) {
			return ""
		}
	}
}

func ctldLogPath() string { return hostPath("/var/lib/gpumem-lab/" + release + "/log/slurmctld.log") }

// ctldConf is where slurmctld's configuration (slurm.conf, gres.conf, gpumem.conf, the
// inventory) is on this machine: /etc/slurm, or in a configless lab (LAB_CONFIGLESS=1)
// the controller's own folder, which no node or client reads.
func ctldConf(name string) string {
	if os.Getenv("LAB_CONFIGLESS") == "1" {
		return hostPath(filepath.Join("/var/lib/gpumem-lab", release, "etc", name))
	}
	return hostPath(filepath.Join("/etc/slurm", name))
}

// envOf reads KEY=VALUE lines, as `env` prints them.
func envOf(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, found := strings.Cut(l, "="); found {
			m[k] = v
		}
	}
	return m
}

// clean cancels every job, so each test starts from an empty cluster and one test's
// leftovers never change where the next one's jobs land.
func clean(t testing.TB) {
	t.Helper()
	ok(t, "scancel", "--quiet", "-u", "root")
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if strings.TrimSpace(ok(t, "squeue", "-h", "-o", "%i")) == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("jobs still queued 30s after scancel:\n%s", ok(t, "squeue"))
}

var submittedRE = regexp.MustCompile(`Submitted batch job (\d+)`)

// sbatch submits and returns the job id. A --wrap job's output goes nowhere, so runs
// leave no slurm-N.out behind in the test's directory; a script names its own.
func sbatch(t testing.TB, args ...string) string {
	t.Helper()
	if slices.Contains(args, "--wrap") {
		args = append([]string{"--output=/dev/null"}, args...)
	}
	out := ok(t, append([]string{"sbatch"}, args...)...)
	m := submittedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("sbatch %v: no job id in %q", args, out)
	}
	return m[1]
}

// waitState waits until a job reaches one of the states and returns the one reached.
func waitState(t testing.TB, id string, states ...string) string {
	t.Helper()
	return waitStateFor(t, id, 60*time.Second, states...)
}

// waitStateFor is waitState with its own deadline.
func waitStateFor(t testing.TB, id string, d time.Duration, states ...string) string {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		last = strings.TrimSpace(slurm(t, 30*time.Second, "", "squeue", "-h", "-j", id, "-o", "%T").out)
		for _, s := range states {
			if last == s {
				return s
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %s: state %q after %s, want one of %v", id, last, d, states)
	return ""
}

func atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}
