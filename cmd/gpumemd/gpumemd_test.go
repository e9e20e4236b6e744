package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/history/api"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

// node writes a fake node file: two H100s, GPU 0 running pid with usedMiB, GPU 1 lost
// or not.
func node(t *testing.T, path string, pid, usedMiB int, lost bool) {
	t.Helper()
	b := fmt.Sprintf(`{"gpus": [
		{"model": "h100-80gb", "temperature_c": 40, "power_mw": 200000, "utilization_gpu": 30,
		 "processes": [{"pid": %d, "used_mib": %d}]},
		{"model": "h100-80gb", "lost": %v}]}`, pid, usedMiB, lost)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// start runs gpumemd in-process until the test ends and returns its address.
func start(t *testing.T, args ...string) string {
	t.Helper()
	return startLogging(t, io.Discard, args...)
}

// startLogging is start with gpumemd's log written to out.
func startLogging(t *testing.T, out io.Writer, args ...string) string {
	t.Helper()
	ready, done := launch(t, out, args...)
	select {
	case addr := <-ready:
		return addr
	case err := <-done:
		t.Fatalf("gpumemd did not start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("gpumemd did not start within 10s")
	}
	return ""
}

// launch runs gpumemd in-process, its log written to out, until the test ends: ready
// receives the address once it listens, done its end (then is closed).
func launch(t *testing.T, out io.Writer, args ...string) (ready <-chan string, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := make(chan string, 1)
	d := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(out, nil))
	go func() { d <- run(ctx, args, log, r); close(d) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err, ok := <-d:
			if ok && err != nil {
				t.Errorf("gpumemd ended with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("gpumemd did not stop within 10s of its context ending")
		}
	})
	return r, d
}

var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

func scrape(t *testing.T, url string) string {
	t.Helper()
	code, b := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, code, b)
	}
	return string(b)
}

// get fetches url and returns the status and body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// eventually polls cond every 50ms for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestSidecarEndToEnd(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	t.Cleanup(func() {
		// Registered first, so it runs last: after gpumemd stopped.
		if !eventually(3*time.Second, func() bool { return runtime.NumGoroutine() <= goroutines+2 }) {
			buf := make([]byte, 1<<16)
			t.Errorf("goroutines: %d before, %d after stop\n%s", goroutines, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
	})
	dir := t.TempDir()
	job := exec.Command("sleep", "300")
	// The job claims 80 shards; Slurm gave it 10.
	job.Env = []string{"SLURM_JOB_ID=501", "SLURM_SHARDS_ON_NODE=80"}
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- job.Wait() }()
	t.Cleanup(func() { job.Process.Kill() })

	fake := filepath.Join(dir, "node.json")
	node(t, fake, job.Process.Pid, 12*1024, false)
	slurm := slurmtest.New(t, false)
	slurm.SetJobs(slurmtest.Job{ID: "501", UID: os.Getuid(), Node: "t1", GPU: 0, Shards: 10, PIDs: []int{job.Process.Pid}, Account: "physics"})
	scontrol := slurm.Scontrol
	nodeCalls := func() string {
		var out []string
		for _, l := range strings.Split(slurm.Calls(), "\n") {
			if strings.HasPrefix(l, "update") || strings.HasPrefix(l, "show node") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	conf := filepath.Join(dir, "gpumem.conf")
	os.WriteFile(conf, []byte("ShardUnit = 1GiB\nSlurmConf = "+filepath.Join(dir, "no-slurm.conf")+"\n[gpumemd]\nUsagePolicy = kill\nUsageGrace = 600ms\n"), 0o644)

	addr := start(t, "--config", conf, "--nvml", "fake:"+fake, "--node", "t1", "--listen", "127.0.0.1:0",
		"--poll-interval", "200ms", "--history-db", filepath.Join(dir, "history.db"),
		"--write-gres", "--gres-conf", filepath.Join(dir, "gres.conf"),
		"--write-inventory", "--inventory-dir", filepath.Join(dir, "inventory"),
		"--drain", "--resume", "--scontrol", scontrol, "--health-state", filepath.Join(dir, "health.json"))
	base := "http://" + addr

	var metrics string
	eventually(3*time.Second, func() bool {
		metrics = scrape(t, base+"/metrics")
		return strings.Contains(metrics, `jobid="501"`)
	})
	for _, want := range []string{
		// Slurm's user, account and partition of the job label its series, and the node
		// its Hostname, as on the GPU series.
		`gpumem_job_memory_used_bytes{Hostname="t1",account="physics",jobid="501",partition="p",user="u"} 1.2884901888e+10`,
		`gpumem_job_memory_allocated_bytes{Hostname="t1",account="physics",jobid="501",kind="shard",partition="p",user="u"} 1.073741824e+10`,
		`gpumem_job_over_allocation{Hostname="t1",account="physics",jobid="501",partition="p",user="u"} 1`,
		// dcgm-exporter's labels, with the job GPU 0 serves.
		`gpumem_gpu_temperature_celsius{Hostname="t1",UUID="`,
		`gpu="0",hpc_job="501",modelName="`,
		`gpumem_sidecar_healthy 1`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s\n%s", want, metrics)
		}
	}

	// Kill policy: the job is over its 10 GiB and is killed after the 600ms grace.
	select {
	case <-waited:
		if ws, _ := job.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
			t.Fatalf("job ended with %v, want SIGKILL", job.ProcessState)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("job over its slice was not killed within 5s")
	}
	if !eventually(3*time.Second, func() bool {
		return strings.Contains(scrape(t, base+"/metrics"), `gpumem_enforcement_actions_total{action="kill"} 1`)
	}) {
		t.Error("kill not counted in gpumem_enforcement_actions_total")
	}

	// gres.conf and the inventory came from the fake node.
	gres, err := os.ReadFile(filepath.Join(dir, "gres.conf"))
	if err != nil || !strings.Contains(string(gres), "Name=shard") || !strings.Contains(string(gres), "NodeName=t1") {
		t.Errorf("gres.conf = %q, %v; want shard lines for t1", gres, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "inventory", "t1.json")); err != nil {
		t.Errorf("inventory: %v", err)
	}

	// History over the API, as gpumemctl jobs reads it.
	c := api.Client{Base: base, HTTP: client}
	if !eventually(3*time.Second, func() bool {
		d, err := c.Job(context.Background(), "501")
		return err == nil && d.Job.PeakBytes == 12<<30 && d.Job.AllocBytes == 10<<30
	}) {
		d, err := c.Job(context.Background(), "501")
		t.Errorf("history of job 501 = %+v, %v", d, err)
	}

	// A lost GPU drains the node, its return resumes it.
	node(t, fake, job.Process.Pid, 0, true)
	if !eventually(5*time.Second, func() bool { return strings.Contains(nodeCalls(), "state=drain") }) {
		t.Fatal("lost GPU 1 did not drain the node")
	}
	// The gauges are set after the drain call returns: wait for them as for the call.
	if !eventually(3*time.Second, func() bool {
		m := scrape(t, base+"/metrics")
		return strings.Contains(m, "gpumem_sidecar_healthy 0") && strings.Contains(m, "gpumem_sidecar_node_drained 1")
	}) {
		t.Error("lost GPU not shown in gpumem_sidecar_healthy / node_drained")
	}
	node(t, fake, job.Process.Pid, 0, false)
	if !eventually(5*time.Second, func() bool { return strings.Contains(nodeCalls(), "state=resume") }) {
		t.Fatal("node not resumed after GPU 1 came back")
	}
	if b, want := nodeCalls(), "show node t1 -o\nupdate nodename=t1 state=drain reason=gpumem: health: GPU 1 lost"; !strings.HasPrefix(b, want) {
		t.Errorf("scontrol calls %q; want to start with %q (a look for an earlier drain, then the drain)", b, want)
	}

}

func TestBasicAuthFromWebConfig(t *testing.T) {
	dir := t.TempDir()
	web := filepath.Join(dir, "web.yml")
	// bcrypt of "s3cret"; exporter-toolkit checks it, gpumemd holds no auth code.
	os.WriteFile(web, []byte("basic_auth_users:\n  prom: $2a$04$5J03X8L0bXAb14TKGUlgu.0TnndGc2cAKTieOpo1kJ9Pam6jRqzt2\n"), 0o600)
	addr := start(t, "--config", "/dev/null", "--nvml", "mock:dgxh100", "--node", "t2", "--listen", "127.0.0.1:0",
		"--history-db", "", "--health-state", "", "--web.config.file", web)
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no credentials: %s, want 401", resp.Status)
	}
	var body []byte
	if !eventually(3*time.Second, func() bool {
		req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		req.SetBasicAuth("prom", "s3cret")
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), "gpumem_gpu_memory_total_bytes")
	}) {
		t.Fatalf("with credentials: %s", body)
	}
	// History off: the API says so instead of a bare 404.
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/jobs", nil)
	req.SetBasicAuth("prom", "s3cret")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e api.Error
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(e.Error, "history is off") {
		t.Fatalf("/api/jobs without history: %s %q", resp.Status, e.Error)
	}
}

func TestBadSettingsStopAtStart(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "gpumem.conf")
	os.WriteFile(conf, []byte("[gpumemd]\nDrain = perhaps\n"), 0o644)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", conf}, `drain = "perhaps": want yes or no`},
		{[]string{"--config", "/dev/null", "--usage-policy", "nuke"}, "want record, warn or kill"},
		{[]string{"--config", "/dev/null", "--usage-policy", "kill", "--usage-grace", "1s", "--poll-interval", "10s"}, "shorter than --poll-interval"},
		{[]string{"--config", "/dev/null", "--nvml", "bogus"}, "unknown backend"},
		{[]string{"--config", "/dev/null", "--once"}, "add --write-gres, --write-inventory or both"},
		{[]string{"--config", "/dev/null", "--slurm-version", "22"}, `--slurm-version "22"`},
		{[]string{"--config", "/dev/null", "--nvml", "mock:dgxh100", "--web.config.file", filepath.Join(dir, "none.yml")}, "--web.config.file"},
	} {
		err := run(context.Background(), c.args, log, nil)
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.want)) {
			t.Errorf("gpumemd %v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestNVMLFailingAtStartDrains: a node whose NVML cannot start is not left in service
// by a sidecar that exits and crash-loops: gpumemd runs, reports it unhealthy, drains
// it, and resumes it once NVML starts.
func TestNVMLFailingAtStartDrains(t *testing.T) {
	dir := t.TempDir()
	slurm := slurmtest.New(t, false)
	fake := filepath.Join(dir, "node.json") // not there yet: NVML cannot start
	addr := start(t, "--config", "/dev/null", "--nvml", "fake:"+fake, "--node", "t1", "--listen", "127.0.0.1:0",
		"--poll-interval", "100ms", "--history-db", "", "--drain", "--resume", "--drain-after", "2", "--resume-after", "2",
		"--scontrol", slurm.Scontrol, "--health-state", filepath.Join(dir, "health.json"))
	if !eventually(5*time.Second, func() bool {
		return strings.Contains(slurm.Calls(), "state=drain reason=gpumem: health: NVML failed: NVML cannot start")
	}) {
		t.Fatalf("NVML failing at start did not drain the node; scontrol calls:\n%s", slurm.Calls())
	}
	if m := scrape(t, "http://"+addr+"/metrics"); !strings.Contains(m, "gpumem_sidecar_healthy 0") {
		t.Errorf("/metrics while NVML cannot start:\n%s", m)
	}
	node(t, fake, 1, 0, false)
	if !eventually(5*time.Second, func() bool { return strings.Contains(slurm.Calls(), "state=resume") }) {
		t.Fatalf("NVML started but the node was not resumed; scontrol calls:\n%s", slurm.Calls())
	}
	if !eventually(3*time.Second, func() bool { return strings.Contains(scrape(t, "http://"+addr+"/metrics"), "gpumem_sidecar_healthy 1") }) {
		t.Error("not healthy once NVML started")
	}
}

// TestAPIStaysOffPublicListeners: the job history answers on loopback; on a wider
// listener only with a web config or APIPublic. /metrics answers everywhere.
func TestAPIStaysOffPublicListeners(t *testing.T) {
	for _, c := range []struct {
		extra []string
		code  int
	}{{nil, http.StatusForbidden}, {[]string{"--api-public"}, http.StatusOK}} {
		dir := t.TempDir()
		args := append([]string{"--config", "/dev/null", "--nvml", "mock:dgxh100", "--node", "t3", "--listen", "0.0.0.0:0",
			"--history-db", filepath.Join(dir, "h.db"), "--health-state", ""}, c.extra...)
		addr := start(t, args...)
		_, port, _ := strings.Cut(addr, "]:")
		if port == "" {
			_, port, _ = strings.Cut(addr, ":")
		}
		base := "http://127.0.0.1:" + port
		scrape(t, base+"/metrics")
		resp, err := client.Get(base + "/api/jobs")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%v on %s: /api/jobs %s %s; want %d", c.extra, addr, resp.Status, b, c.code)
		}
	}
}

// The start log says what each listener exposes, so an admin who opens a port sees
// that /api stays refused there (and why) before anyone is turned away.
func TestListenerSaysWhatItExposes(t *testing.T) {
	for _, c := range []struct {
		listen string
		extra  []string
		api    string
	}{
		{"127.0.0.1:0", nil, `api="open: loopback only"`},
		{"0.0.0.0:0", nil, `api="refused (403): not loopback, no web config with TLS or auth, APIPublic = no"`},
		{"0.0.0.0:0", []string{"--api-public"}, `api="open to anyone who reaches it (APIPublic = yes)"`},
	} {
		var logged syncBuffer
		args := append([]string{"--config", "/dev/null", "--nvml", "mock:dgxh100", "--node", "t3", "--listen", c.listen,
			"--history-db", filepath.Join(t.TempDir(), "h.db"), "--health-state", ""}, c.extra...)
		addr := startLogging(t, &logged, args...)
		var line string
		for deadline := time.Now().Add(5 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, l := range strings.Split(logged.String(), "\n") {
				if strings.Contains(l, "msg=listening") {
					line = l
				}
			}
		}
		if !strings.Contains(line, c.api) || !strings.Contains(line, "metrics=on") || !strings.Contains(line, addr) {
			t.Errorf("--listen %s %v: start log %q; want %s and the address %s", c.listen, c.extra, line, c.api, addr)
		}
	}
}
