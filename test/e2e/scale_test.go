//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSteeringAtScale is the small version of the cluster-scale steering comparison
// (test/steer/scale.sh, docs/steering.md): one seed's stream, with arrivals, departures
// and a queue, on the LAB_SCALE lab, once as Slurm places it and once pinned by steer's
// snapshot. It holds the comparison to what makes its figures mean anything: every job
// of the stream is in Slurm's accounting and counted once, as started or pending; the
// native run pins nothing and the pinned run pins at least a quarter of the jobs it starts; both runs
// hold GPUs and start jobs. Which of the two places more is what the full run measures,
// not what this one asserts.
func TestSteeringAtScale(t *testing.T) {
	nodes := os.Getenv("LAB_SCALE")
	if nodes == "" {
		t.Skip("not a LAB_SCALE lab (test/e2e.sh 24.11-scale)")
	}
	const jobs = 60
	results := filepath.Join(t.TempDir(), "scale.tsv")
	cmd := exec.Command("../steer/scale.sh", "42", nodes, strconv.Itoa(jobs))
	// Short runs: the lab's GPUs fill within seconds, and jobs still end and queue.
	cmd.Env = append(os.Environ(), "RESULTS="+results, "TSCALE=120", "DMIN=4", "DMAX=20", "HORIZON=15", "WARM=10", "UNPIN=10s")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("scale.sh in %s:\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("scale.sh: %v", err)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and two runs in %s, got:\n%s", results, b)
	}
	cols := strings.Split(lines[0], "\t")
	runs := map[string]map[string]float64{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != len(cols) {
			t.Fatalf("run line %q has %d fields; the header has %d", l, len(f), len(cols))
		}
		r := map[string]float64{}
		for i := 2; i < len(f); i++ {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				t.Fatalf("%s of run %q: %v", cols[i], l, err)
			}
			r[cols[i]] = v
		}
		runs[f[1]] = r
	}
	for _, mode := range []string{"native", "pinned"} {
		r, found := runs[mode]
		if !found {
			t.Fatalf("no %s run in %s", mode, results)
		}
		if got := r["started"] + r["pending"]; got != jobs {
			t.Errorf("%s: %v started + %v pending = %v; the stream has %d jobs", mode, r["started"], r["pending"], got, jobs)
		}
		if r["started"] < jobs/4 {
			t.Errorf("%s: only %v of %d jobs started", mode, r["started"], jobs)
		}
		for _, c := range []string{"alloc_pct", "alloc_steady_pct"} {
			if r[c] <= 0 || r[c] > 100 {
				t.Errorf("%s: GPU allocation %s %v%%; want within (0, 100]", mode, c, r[c])
			}
		}
		if r["wait_mean_s"] < 0 || r["wait_p95_s"] < 0 {
			t.Errorf("%s: negative queue wait (mean %v, p95 %v)", mode, r["wait_mean_s"], r["wait_p95_s"])
		}
	}
	if n := runs["native"]["pinned"]; n != 0 {
		t.Errorf("native run: %v jobs pinned; with no snapshot job_submit must pin none", n)
	}
	if p, s := runs["pinned"]["pinned"], runs["pinned"]["started"]; p < s/4 {
		t.Errorf("pinned run: %v of %v started jobs seen pinned; steer's snapshot should pin at least a quarter", p, s)
	}
}
