//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sidecar is gpumemd for one lab node, started by the test itself: the lab's Slurm
// daemons all run on this host, so one gpumemd with --node NODE and a copy of that
// node's fake NVML file stands for the sidecar of that node. It listens on a loopback
// port of its own and stops when the test ends.
type sidecar struct {
	node string
	fake string         // the fake NVML file gpumemd reads; the test writes its live fields
	spec map[string]any // that file's contents
	logf string         // gpumemd's stderr
	base string         // http://127.0.0.1:PORT
	port int            // the port to listen on; 0: a free one
	done chan struct{}  // closed when the last gpumemd started has exited
	proc *os.Process    // the last gpumemd started
	// scontrol is the Scontrol gpumemd runs (squeue and scancel beside it); "" for the
	// lab's own (scontrolFor).
	scontrol string
}

// newSidecar copies the lab's node file and writes a gpumem.conf for gpumemd; start
// runs it.
func newSidecar(t *testing.T, node string) *sidecar {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "lab", "nodes", node+".json"))
	if err != nil {
		t.Fatal(err)
	}
	s := &sidecar{node: node, fake: filepath.Join(dir, node+".json"), logf: filepath.Join(dir, "gpumemd.log")}
	if err := json.Unmarshal(b, &s.spec); err != nil {
		t.Fatalf("lab node file %s: %v", node, err)
	}
	s.write(t)
	return s
}

// gpus are the node file's GPUs, to set live fields (processes, xids) on.
func (s *sidecar) gpus(t *testing.T) []map[string]any {
	t.Helper()
	list, _ := s.spec["gpus"].([]any)
	out := make([]map[string]any, len(list))
	for i, g := range list {
		out[i] = g.(map[string]any)
	}
	return out
}

// write replaces the fake file in one rename, so gpumemd never reads half of it.
func (s *sidecar) write(t *testing.T) {
	t.Helper()
	b, err := json.MarshalIndent(s.spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	tmp := s.fake + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.fake); err != nil {
		t.Fatal(err)
	}
}

// start runs bin/gpumemd with args on top of the sidecar's config until the test (or
// subtest) ends, and waits until /metrics answers.
func (s *sidecar) start(t *testing.T, args ...string) {
	t.Helper()
	s.launch(t, args...)
	if !eventually(10*time.Second, func() bool { _, err := get(s.base + "/metrics"); return err == nil }) {
		t.Fatalf("gpumemd %v: no /metrics within 10s\n%s", args, s.log())
	}
}

// launch is start without the wait for /metrics.
func (s *sidecar) launch(t *testing.T, args ...string) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "bin", "gpumemd"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run make build", err)
	}
	dir := t.TempDir()
	port := s.port
	if port == 0 {
		port = freePort(t)
	}
	conf := filepath.Join(dir, "gpumem.conf")
	scontrol := s.scontrol
	if scontrol == "" {
		scontrol = scontrolFor(t, dir)
	}
	os.WriteFile(conf, []byte(fmt.Sprintf(`ShardUnit = 1GiB
SlurmConf = %s
[gpumemd]
NVML = fake:%s
NodeName = %s
Listen = 127.0.0.1:%d
PollInterval = 1s
HistoryDB = %s
HealthState = %s
Scontrol = %s
`, hostPath("/etc/slurm/slurm.conf"), s.fake, s.node, port, filepath.Join(dir, "history.db"), filepath.Join(dir, "health.json"), scontrol)), 0o644)
	logf, err := os.OpenFile(s.logf, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--config", conf}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	done := make(chan struct{})
	s.done, s.proc = done, cmd.Process
	go func() { exited <- cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("gpumemd did not stop within 10s of SIGTERM")
		}
	})
	s.base = fmt.Sprintf("http://127.0.0.1:%d", port)
}

func (s *sidecar) log() string { b, _ := os.ReadFile(s.logf); return string(b) }

// metrics is a scrape with the user, account, partition and Hostname labels of job
// series left out, so the per-job tests name a series by its job alone; rawMetrics keeps
// them. GPU series keep their Hostname.
func (s *sidecar) metrics(t *testing.T) string {
	t.Helper()
	return stripJobMeta(s.rawMetrics(t))
}

func stripJobMeta(m string) string {
	m = jobHostname.ReplaceAllString(m, "$1")
	return strings.ReplaceAll(jobMetaLabels.ReplaceAllString(m, ""), ",}", "}")
}

var (
	jobMetaLabels = regexp.MustCompile(`(?:account|partition|user)="[^"]*",?`)
	// Hostname sorts first, and only a job series has account after it (and UUID).
	jobHostname = regexp.MustCompile(`Hostname="[^"]*",((?:UUID="[^"]*",)?account=)`)
)

func (s *sidecar) rawMetrics(t *testing.T) string {
	t.Helper()
	m, err := get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// scontrolFor is the scontrol gpumemd asks and drains with: the lab's own, in its
// chroot for 24.11, through a two-line wrapper (and squeue beside it, which gpumemd
// takes from the same directory).
func scontrolFor(t *testing.T, dir string) string {
	if root == "" {
		return "scontrol"
	}
	for _, name := range []string{"scontrol", "squeue", "scancel", "sacct", "sacctmgr"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexec chroot "+root+" "+name+" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "scontrol")
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func get(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(200 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// jobPIDs finds the processes of a running job by the SLURM_JOB_ID slurmstepd puts in
// their environment: the lab runs without cgroups (proctrack/linuxproc), as gpumemd's
// own fallback reads them. Only the processes named comm count (the job's payload,
// not its batch shell).
func jobPIDs(t *testing.T, job, comm string) []int {
	t.Helper()
	var pids []int
	eventually(10*time.Second, func() bool {
		pids = nil
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			c, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "comm"))
			env, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
			if strings.TrimSpace(string(c)) == comm && strings.Contains("\x00"+string(env), "\x00SLURM_JOB_ID="+job+"\x00") {
				pids = append(pids, pid)
			}
		}
		return len(pids) > 0
	})
	if len(pids) == 0 {
		t.Fatalf("job %s: no %s process with SLURM_JOB_ID=%s within 10s", job, comm, job)
	}
	return pids
}

func alivePID(pid int) bool { return syscall.Kill(pid, 0) == nil }
