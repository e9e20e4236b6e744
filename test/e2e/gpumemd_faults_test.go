//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGpumemdLivesThroughFaults: an unprivileged user binds n3's gpumemd port before
// gpumemd starts, and its history.db is torn. gpumemd neither exits nor idles: a lost
// GPU still drains n3 through the lab's real Slurm while the port is held; it retries
// the port and serves once the user lets go, with the failed listens and the history
// it set aside (renamed, not deleted) in /metrics.
func TestGpumemdLivesThroughFaults(t *testing.T) {
	clean(t)
	ensureLabUser(t)
	const node = "n3"
	t.Cleanup(func() {
		// Runs after gpumemd stopped (registered before it started): nothing re-drains.
		if st, _ := nodeState(t, node); strings.Contains(st, "DRAIN") {
			ok(t, "scontrol", "update", "nodename="+node, "state=resume")
		}
		eventually(20*time.Second, func() bool {
			st, _ := nodeState(t, node)
			return !strings.Contains(st, "DRAIN") && !strings.Contains(st, "NOT_RESPONDING")
		})
	})
	if st, reason := nodeState(t, node); strings.Contains(st, "DRAIN") {
		t.Fatalf("%s drained before the test: %s", node, reason)
	}
	s := newSidecar(t, node)
	s.port = freePort(t)

	// The squatter holds the port until its stdin closes.
	squatter := exec.Command("runuser", "-u", labUser, "--", "/usr/bin/python3", "-c", fmt.Sprintf(
		"import socket, sys\ns = socket.socket()\ns.bind(('127.0.0.1', %d))\ns.listen(1)\nprint('bound', flush=True)\nsys.stdin.read()\n", s.port))
	stdin, _ := squatter.StdinPipe()
	stdout, _ := squatter.StdoutPipe()
	if err := squatter.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); squatter.Wait() })
	bound := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		bound <- line
	}()
	select {
	case line := <-bound:
		if strings.TrimSpace(line) != "bound" {
			t.Fatalf("the squatter did not bind port %d: %q", s.port, line)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the squatter did not bind port %d within 10s", s.port)
	}

	db := filepath.Join(t.TempDir(), "history.db")
	if err := os.WriteFile(db, []byte(strings.Repeat("torn page ", 10000)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.gpus(t)[1]["lost"] = true
	s.write(t)
	s.launch(t, "--drain", "--history-db", db)

	var st, reason string
	if !eventually(20*time.Second, func() bool {
		st, reason = nodeState(t, node)
		return strings.Contains(st, "DRAIN")
	}) {
		t.Fatalf("%s not drained within 20s of a lost GPU while the port was held: State=%s\n%s", node, st, s.log())
	}
	if !strings.HasPrefix(reason, "gpumem: ") || !strings.Contains(reason, "lost") {
		t.Errorf("drain reason %q; want gpumem's, naming the lost GPU", reason)
	}
	select {
	case <-s.done:
		t.Fatalf("gpumemd exited while its port was held:\n%s", s.log())
	default:
	}
	if l := s.log(); !strings.Contains(l, "duty=listen") || !strings.Contains(l, "address already in use") {
		t.Errorf("the held port is not in gpumemd's log:\n%s", l)
	}

	stdin.Close() // the user lets go
	squatter.Wait()
	if !eventually(60*time.Second, func() bool { _, err := get(s.base + "/metrics"); return err == nil }) {
		t.Fatalf("no /metrics within 60s of the port being freed\n%s", s.log())
	}
	var m string
	if !eventually(10*time.Second, func() bool {
		m = s.metrics(t)
		return metricValue(m, `gpumem_sidecar_duty_up{duty="listen"}`) == 1
	}) {
		t.Errorf("listen not up in /metrics:\n%s", m)
	}
	if n := metricValue(m, `gpumem_sidecar_duty_failures_total{duty="listen"}`); n < 1 {
		t.Errorf("failed listens: %v, want at least 1", n)
	}
	if n := metricValue(m, "gpumem_sidecar_history_set_aside_total"); n != 1 {
		t.Errorf("histories set aside: %v, want 1\n%s", n, s.log())
	}
	if aside, _ := filepath.Glob(db + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("torn history kept as %v, want one %s.corrupt-TIME", aside, db)
	}
	t.Logf("n3 drained while the port was held (%s); listen failures %v", reason,
		metricValue(m, `gpumem_sidecar_duty_failures_total{duty="listen"}`))
}
