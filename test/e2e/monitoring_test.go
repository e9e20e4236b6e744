//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/advise"
	"github.com/gpumem/gpumem/internal/versioned"
)

// labProm is the lab's own Prometheus (test/lab/prometheus.sh): its API and the
// directory whose files name what it scrapes.
type labProm struct {
	base, targets string
}

func labPrometheus(t *testing.T) labProm {
	t.Helper()
	p := labProm{base: "http://127.0.0.1:" + promPort, targets: "/var/lib/gpumem-lab/prometheus-" + labID + "/targets"}
	if _, err := get(p.base + "/-/ready"); err != nil {
		t.Fatalf("the lab's Prometheus does not answer (%v): lab.sh up starts it when Debian's prometheus is installed (test/lab/deps.sh)", err)
	}
	return p
}

// scrape makes Prometheus scrape addr as job ("gpumemd" or "cluster") until the test
// ends.
func (p labProm) scrape(t *testing.T, job, name, addr string) {
	t.Helper()
	f := filepath.Join(p.targets, job+"-"+name+".json")
	b, _ := json.Marshal([]map[string]any{{"targets": []string{addr}}})
	if err := os.WriteFile(f+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f+".tmp", f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f) })
}

// query is an instant query; it returns the series' labels and values.
func (p labProm) query(t *testing.T, q string) []map[string]string {
	t.Helper()
	body, err := get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatalf("query %s: %v %s", q, err, body)
	}
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	var out []map[string]string
	for _, s := range r.Data.Result {
		s.Metric["__value__"] = fmt.Sprint(s.Value[1])
		out = append(out, s.Metric)
	}
	return out
}

// TestMonitoringOnPrometheus: the lab's Prometheus scrapes gpumemd on n1, n2 and n3 and
// gpumemctl exporter while n3 runs a job over its slice, two jobs asking 8 GiB and
// using 2 and 3, and a sleep job holding 4 GiB with no GPU process, a held gpu:mem job
// pends, a held MIG job counts in the demand by size class, two gpu:mem jobs sent past cli_filter are refused by job_submit (counted in
// gpumem_refused_jobs_total), and XID 79 drains n2. Every dashboard panel query and every recording rule
// returns series; the over-use, idle, drain and XID alerts fire. Then, with IdlePolicy
// requeue, the idle job is warned through Slurm and requeued with the reason in its
// AdminComment while the busy jobs beside it run on; and gpumemctl advise on n3's
// history advises 3g for the two over-asking jobs.
func TestMonitoringOnPrometheus(t *testing.T) {
	clean(t)
	t.Cleanup(func() { clean(t) })
	prom := labPrometheus(t)
	g := readGres(t)
	outDir := "/tmp/gpumem-monitoring-" + strconv.Itoa(os.Getpid())
	if err := os.MkdirAll(hostPath(outDir), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostPath(outDir)) })

	over := submitShardJob(t, g, outDir, "4g", "busy", 6<<10, 4)
	plantA := submitShardJob(t, g, outDir, "8g", "overask", 2<<10, 8)
	plantB := submitShardJob(t, g, outDir, "8g", "overask", 3<<10, 8)
	idle := sbatch(t, "-p", "inference", "--gres=gpu:mem:4g", "-J", "idler", "--output="+outDir+"/%j.out", "--wrap", "sleep 300")
	waitState(t, idle, "RUNNING")
	sbatch(t, "--hold", "-p", "inference", "--gres=gpu:mem:8g", "--wrap", "sleep 1")
	// job_submit makes this gpu:2g.10gb:1 (TestScontrolUpdateKnowsTheJob): demand at
	// the profile's 10 GiB, size class 16G, which no shard job of this test is in.
	sbatch(t, "--hold", "-C", "mig", "--gres=gpu:mem:8g", "--wrap", "sleep 1")

	const drained = "n2"
	t.Cleanup(func() {
		if st, _ := nodeState(t, drained); strings.Contains(st, "DRAIN") {
			ok(t, "scontrol", "update", "nodename="+drained, "state=resume")
		}
	})
	sidecars := map[string]*sidecar{}
	for _, n := range []string{"n1", "n2", "n3"} {
		sidecars[n] = newSidecar(t, n)
	}
	n3 := sidecars["n3"]
	n3.report(t, over, plantA, plantB)
	sidecars["n1"].start(t)
	// Held until the cleanup resumes n2, so the drain lasts as long as the test.
	sidecars["n2"].start(t, "--drain", "--xid-hold", "0s", "--drain-after", "1")
	for _, n := range []string{"n1", "n2"} {
		prom.scrape(t, "gpumemd", n, strings.TrimPrefix(sidecars[n].base, "http://"))
	}
	exporter := startExporter(t)
	prom.scrape(t, "cluster", "ctl", exporter)
	refusedJobs(t, prom, exporter)
	if q := `gpumem_cluster_pending_jobs{size="16G"} == 1`; !eventually(30*time.Second, func() bool { return len(prom.query(t, q)) == 1 }) {
		t.Errorf("the held MIG job is not in the demand: %s is empty; %v", q, prom.query(t, "gpumem_cluster_pending_jobs"))
	}
	sidecars[drained].gpus(t)[0]["xids"] = []any{map[string]any{"xid": 79}}
	sidecars[drained].write(t)

	// Phase one: IdlePolicy record on n3, stopped when this subtest ends.
	t.Run("record", func(t *testing.T) {
		n3.start(t, "--idle-policy", "record", "--idle-after", "2s", "--idle-interval", "1s")
		prom.scrape(t, "gpumemd", "n3", strings.TrimPrefix(n3.base, "http://"))
		if !eventually(30*time.Second, func() bool {
			return len(prom.query(t, `up{job="gpumemd"} == 1`)) == 3 && len(prom.query(t, `up{job="gpumem-cluster"} == 1`)) == 1
		}) {
			t.Fatalf("Prometheus does not scrape the three sidecars and the exporter: %v", prom.query(t, "up"))
		}

		t.Run("panels and recording rules", func(t *testing.T) {
			var d struct {
				Panels []struct {
					Type, Title string
					Targets     []struct{ Expr string }
				}
			}
			b, err := os.ReadFile("../../packaging/monitoring/gpumem-dashboard.json")
			if err != nil || json.Unmarshal(b, &d) != nil {
				t.Fatalf("dashboard: %v", err)
			}
			vars := strings.NewReplacer("$instance", ".*", "$node", ".*", "$__rate_interval", "30s")
			want := map[string]string{} // query -> where
			for _, p := range d.Panels {
				for _, tg := range p.Targets {
					want[vars.Replace(tg.Expr)] = "panel " + p.Title
				}
			}
			rules, err := os.ReadFile("../../packaging/monitoring/gpumem-rules.yml")
			if err != nil {
				t.Fatalf("recording rules: %v", err)
			}
			recorded := regexp.MustCompile(`(?m)^\s+- record: (\S+)$`).FindAllStringSubmatch(string(rules), -1)
			if len(recorded) == 0 || len(d.Panels) == 0 {
				t.Fatalf("%d recording rules, %d panels: nothing to query", len(recorded), len(d.Panels))
			}
			for _, m := range recorded {
				want[m[1]] = "recording rule"
			}
			empty := map[string]string{}
			eventually(45*time.Second, func() bool {
				clear(empty)
				for q, where := range want {
					if len(prom.query(t, q)) == 0 {
						empty[q] = where
					}
				}
				return len(empty) == 0
			})
			for q, where := range empty {
				t.Errorf("%s: %s returns no series", where, q)
			}
			t.Logf("%d queries (panels and recording rules) each returned series", len(want)-len(empty))
			// The series are the lab's jobs: the GPU series name them as dcgm-exporter would.
			if s := prom.query(t, fmt.Sprintf(`gpumem_gpu_memory_allocated_bytes{Hostname="n3",hpc_job=~".*\\b%s\\b.*"}`, idle)); len(s) != 1 {
				t.Errorf("no GPU series of n3 with hpc_job naming idle job %s: %v", idle, s)
			}
			if s := prom.query(t, fmt.Sprintf(`gpumem_job_memory_used_bytes{jobid="%s",partition="inference",user="root"}`, over.id)); len(s) != 1 {
				t.Errorf("job %s's series lack Slurm's partition and user: %v", over.id, prom.query(t, `gpumem_job_memory_used_bytes`))
			}
		})

		t.Run("alerts fire", func(t *testing.T) {
			for alert, match := range map[string]string{
				"GpumemJobOverAllocation": `jobid="` + over.id + `"`,
				"GpumemIdleAllocation":    `jobid="` + idle + `"`,
				"GpumemNodeDrained":       `alertstate="firing"`,
				"GpumemXIDErrors":         `Hostname="` + drained + `",gpu="0",xid="79"`,
			} {
				q := `ALERTS{alertstate="firing",alertname="` + alert + `",` + match + `}`
				if !eventually(30*time.Second, func() bool { return len(prom.query(t, q)) > 0 }) {
					t.Errorf("%s did not fire within 30s: %v", q, prom.query(t, `ALERTS`))
				}
			}
			for _, never := range []string{`ALERTS{alertname="GpumemJobOverAllocation",jobid="` + plantA.id + `"}`, `ALERTS{alertname="GpumemIdleAllocation",jobid="` + over.id + `"}`} {
				if s := prom.query(t, never); len(s) > 0 {
					t.Errorf("%s: %v", never, s)
				}
			}
		})
	})

	t.Run("idle job requeued", func(t *testing.T) {
		n3.start(t, "--idle-policy", "requeue", "--idle-after", "2s", "--idle-grace", "3s", "--idle-interval", "1s")
		prom.scrape(t, "gpumemd", "n3", strings.TrimPrefix(n3.base, "http://"))
		reason := fmt.Sprintf("gpumem: job %s holds 4.0 GiB of GPU memory on n3", idle)
		var show string
		var told bool // the warning reached the job's output (before a restart may truncate it)
		if !eventually(40*time.Second, func() bool {
			b, _ := os.ReadFile(hostPath(filepath.Join(outDir, idle+".out")))
			told = told || strings.Contains(string(b), "gpumem: job "+idle+" holds 4.0 GiB")
			show = ok(t, "scontrol", "show", "job", idle)
			return strings.Contains(show, "AdminComment="+reason) && strings.Contains(show, "requeued by gpumemd's idle policy")
		}) {
			t.Fatalf("job %s not requeued with its reason within 40s:\n%s\n%s", idle, show, n3.log())
		}
		// 24.11 shows the requeue in Restarts at once; 26.05 showed Restarts=0 right after
		// it, so the count is awaited.
		var m []string
		if !eventually(30*time.Second, func() bool {
			m = fieldRE("Restarts").FindStringSubmatch(ok(t, "scontrol", "show", "job", idle))
			return m != nil && m[1] != "0"
		}) {
			t.Errorf("job %s: Restarts=%v; want the requeue counted", idle, m)
		}
		t.Logf("scontrol show job %s: %s", idle, regexp.MustCompile(`AdminComment=.*`).FindString(show))
		// The counters move after the scontrol call that the job's record shows.
		if !eventually(10*time.Second, func() bool {
			return metricValue(n3.metrics(t), `gpumem_idle_actions_total{action="warn"}`) >= 1 &&
				metricValue(n3.metrics(t), `gpumem_idle_actions_total{action="requeue"}`) >= 1
		}) {
			t.Errorf("idle actions not counted:\n%s", grepLines(n3.metrics(t), "idle_actions"))
		}
		if !strings.Contains(n3.log(), "it will be requeued in 3s unless it starts using its GPU") {
			t.Errorf("no warning before the requeue:\n%s", n3.log())
		}
		if !told {
			t.Errorf("the warning did not reach job %s's output (%s) through scontrol notify", idle, filepath.Join(outDir, idle+".out"))
		}
		for _, j := range []sliceJob{over, plantA, plantB} {
			if st := showJob(t, g, j.id).state; st != "RUNNING" || !alivePID(j.pid) {
				t.Errorf("busy job %s: %s; want it untouched", j.id, st)
			}
			if s := ok(t, "scontrol", "show", "job", j.id); strings.Contains(s, "gpumem: job") {
				t.Errorf("busy job %s has a gpumem AdminComment:\n%s", j.id, s)
			}
		}
		// On this sidecar's history: it runs until this subtest ends.
		t.Run("advise", func(t *testing.T) {
			eventually(10*time.Second, func() bool { return apiJobs(t, n3)[plantB.id].PeakBytes == 3<<30 })
			ok(t, "scancel", plantA.id, plantB.id)
			if !eventually(20*time.Second, func() bool {
				a := apiJobs(t, n3)
				return !a[plantA.id].Running && !a[plantB.id].Running && a[plantA.id].ID != ""
			}) {
				t.Fatalf("the cancelled jobs do not end in n3's history: %+v", apiJobs(t, n3))
			}
			bin, _ := filepath.Abs("../../bin/gpumemctl")
			out, err := exec.Command(bin, "advise", "--url", n3.base, "--by", "name", "--min-jobs", "2", "--since", "1h", "-o", "json").CombinedOutput()
			if err != nil {
				t.Fatalf("gpumemctl advise: %v\n%s", err, out)
			}
			var got struct {
				Version int          `json:"version"`
				Rows    []advise.Row `json:"groups"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if err := versioned.Advise.Check(got.Version); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			rows := map[string]advise.Row{}
			for _, r := range got.Rows {
				rows[r.Group] = r
			}
			r := rows["overask"]
			if r.Jobs != 2 || r.AskedBytes != 8<<30 || r.PeakPctBytes != 3<<30 || r.Advised != "3g" || r.OverGiBHours <= 0 {
				t.Errorf("overask: %+v; want 2 jobs asking 8 GiB, p95 peak 3 GiB, advised 3g, some GiB-h over-asked\n%s", r, out)
			}
			t.Logf("gpumemctl advise --by name: %s", strings.Join(strings.Fields(string(out)), " "))
		})
	})
}

// startExporter runs bin/gpumemctl exporter on the lab (its scontrol and squeue, the
// plugins' inventory) until the test ends and returns its address.
func startExporter(t *testing.T) string {
	t.Helper()
	bin, _ := filepath.Abs("../../bin/gpumemctl")
	dir := t.TempDir()
	scontrolFor(t, dir) // 24.11: wrappers into the chroot, first on PATH
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logf, _ := os.Create(filepath.Join(dir, "exporter.log"))
	cmd := exec.Command(bin, "exporter", "--listen", addr, "--interval", "1s", "--shard-unit", "1G",
		"--inventory", hostPath("/etc/slurm/gpumem.d"), "--slurm-conf", hostPath("/etc/slurm/slurm.conf"),
		"--refusal-counts", hostPath("/var/lib/gpumem-lab/"+release+"/refusals.json"))
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
	})
	if !eventually(10*time.Second, func() bool {
		m, err := get("http://" + addr + "/metrics")
		return err == nil && strings.Contains(m, "gpumem_cluster_free_memory_bytes")
	}) {
		b, _ := os.ReadFile(filepath.Join(dir, "exporter.log"))
		m, _ := get("http://" + addr + "/metrics")
		t.Fatalf("gpumemctl exporter has no cluster view within 10s:\n%s\n%s", b, grepLines(m, "gpumem_cluster"))
	}
	return addr
}

// refusedJobs sends two gpu:mem jobs straight to slurmctld (libslurm, past cli_filter)
// that job_submit refuses, one too big for any GPU and one with no readable size, and
// waits for Prometheus to see each class's counter go up by one.
func refusedJobs(t *testing.T, prom labProm, exporter string) {
	t.Helper()
	before := map[string]float64{}
	if !eventually(10*time.Second, func() bool {
		m, err := get("http://" + exporter + "/metrics")
		for _, r := range []string{"no_fit", "invalid_request"} {
			v := regexp.MustCompile(`(?m)^gpumem_refused_jobs_total\{reason="` + r + `"\} (\S+)$`).FindStringSubmatch(m)
			if err != nil || v == nil {
				return false
			}
			before[r], _ = strconv.ParseFloat(v[1], 64)
		}
		return true
	}) {
		m, _ := get("http://" + exporter + "/metrics")
		t.Fatalf("no gpumem_refused_jobs_total from the exporter:\n%s", grepLines(m, "refus"))
	}
	res := slurm(t, time.Minute, tresPrefix()+"gpu:mem:900g\n"+tresPrefix()+"gpu:mem:lots\n", submitterPath(t), "--lines")
	if strings.Count(res.out, "refused") != 2 {
		t.Fatalf("submitter: %q; want both jobs refused by job_submit", res.out)
	}
	for r, was := range before {
		q := fmt.Sprintf(`gpumem_refused_jobs_total{reason=%q} >= %g`, r, was+1)
		if !eventually(30*time.Second, func() bool { return len(prom.query(t, q)) == 1 }) {
			t.Errorf("Prometheus never saw %s: %v", q, prom.query(t, `gpumem_refused_jobs_total`))
		}
	}
	t.Logf("refused jobs before: %v; after: %v", before, prom.query(t, `gpumem_refused_jobs_total`))
}
