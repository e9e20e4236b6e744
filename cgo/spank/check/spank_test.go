// Package check tests spank_gpumem.c, the driver fence's SPANK hook, by building it into
// testdata/harness.c, a stand-in for slurmstepd, and running it against stand-ins for
// gpumemd.
package check

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// harness builds testdata/harness.c with spank_gpumem.c inside, as cgo/build.sh builds
// the plugin (-Wall -Werror), against this machine's Slurm headers.
func harness(t *testing.T) string {
	t.Helper()
	cc := ""
	for _, name := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(name); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("no C compiler (cc, gcc or clang) on $PATH to build testdata/harness.c")
	}
	if _, err := os.Stat("/usr/include/slurm/spank.h"); err != nil {
		t.Skip("no Slurm headers (libslurm-dev):", err)
	}
	bin := filepath.Join(t.TempDir(), "harness")
	if b, err := exec.Command(cc, "-O1", "-Wall", "-Werror", "-Wno-deprecated-declarations", "-o", bin, "testdata/harness.c").CombinedOutput(); err != nil {
		t.Fatalf("%s testdata/harness.c: %v\n%s", cc, err, b)
	}
	return bin
}

// standIn writes an executable shell script for gpumemd.
func standIn(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs one hook and returns its rc, what the plugin logged, and how long it took.
func run(t *testing.T, bin, hook string, args ...string) (int, string, time.Duration) {
	t.Helper()
	// Long enough for any timeout a test sets, and far short of a hung stand-in's 200 s.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{hook}, args...)...)
	cmd.WaitDelay = 5 * time.Second // a stand-in left running must not hold its stdout
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("harness %s %q: %v\n%s", hook, args, err, out)
	}
	s := strings.TrimSpace(string(out))
	i := strings.LastIndex(s, "rc=")
	if i < 0 {
		t.Fatalf("harness %s %q printed no rc:\n%s", hook, args, s)
	}
	rc, err := strconv.Atoi(s[i+3:])
	if err != nil {
		t.Fatalf("harness %s %q: %v\n%s", hook, args, err, s)
	}
	return rc, s[:i], took
}

// TestRunsGpumemd: a gpumemd that exits 0 passes, with the hook's command, the
// arguments ("%n" expanded) and the environment built by the plugin; one that exits 1
// fails the hook with its stderr logged; one that writes far more stderr than a pipe
// holds is read to the end, not left blocked.
func TestRunsGpumemd(t *testing.T) {
	bin := harness(t)
	dir := t.TempDir()
	got := filepath.Join(dir, "got")
	ok := standIn(t, dir, "ok", `echo "$* $SLURM_JOB_ID $SLURMD_NODENAME $GPUMEM_HOOK" >`+got)
	if rc, log, _ := run(t, bin, "prolog", ok, "--config", "/etc/%n.conf"); rc != 0 || log != "" {
		t.Errorf("gpumemd exiting 0: rc %d, logged %q; want 0 and nothing", rc, log)
	}
	if b, _ := os.ReadFile(got); string(b) != "prolog --config /etc/n1.conf 42 n1 spank\n" {
		t.Errorf("gpumemd ran with %q", b)
	}
	fail := standIn(t, dir, "fail", `echo "gpumemd prolog: job 42 on n1: driver fence not set" >&2; exit 1`)
	rc, log, _ := run(t, bin, "fence-check", fail)
	if rc != -1 || !strings.Contains(log, "error: gpumemd prolog: job 42 on n1: driver fence not set\n") ||
		!strings.Contains(log, "`"+fail+" fence-check` failed (status 256)") {
		t.Errorf("gpumemd exiting 1: rc %d, logged\n%s\nwant -1, its stderr and the failure", rc, log)
	}
	loud := standIn(t, dir, "loud", `i=0; while [ $i -lt 2000 ]; do echo "line $i of far more stderr than a pipe holds, and more" >&2; i=$((i+1)); done; exit 0`)
	if rc, log, took := run(t, bin, "prolog", loud); rc != 0 || log != "" || took > 40*time.Second {
		t.Errorf("gpumemd writing 150 KB of stderr: rc %d in %s, logged %.200q; want 0 at once", rc, took, log)
	}
}

// TestHungGpumemdIsKilled: a gpumemd that never finishes (and has started a child of its
// own) is killed, child and all, once plugstack.conf's timeout= has passed, and the hook
// fails: the extern step is not held, and fence-check does not let the step run.
func TestHungGpumemdIsKilled(t *testing.T) {
	bin := harness(t)
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	hang := standIn(t, dir, "hang", `echo "gpumemd prolog: waiting for NVML" >&2; sleep 200 & echo "$$ $!" >`+pids+`; wait`)
	for _, hook := range []string{"prolog", "fence-check"} {
		os.Remove(pids)
		rc, log, took := run(t, bin, hook, "timeout=2", hang)
		want := fmt.Sprintf("error: gpumem: job 42: `%s %s` did not finish in 2 s (plugstack.conf timeout=2); killed", hang, hook)
		if rc != -1 || !strings.Contains(log, want) || !strings.Contains(log, "error: gpumemd prolog: waiting for NVML\n") {
			t.Errorf("%s: rc %d, logged\n%s\nwant -1, what it said and %q", hook, rc, log, want)
		}
		if took > 60*time.Second || took < 2*time.Second {
			t.Errorf("%s: returned after %s; want soon after the 2 s timeout, long before the stand-in's 200 s", hook, took)
		}
		b, err := os.ReadFile(pids)
		if err != nil {
			t.Fatalf("%s: the stand-in never ran: %v", hook, err)
		}
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if alive(pid) {
				t.Errorf("%s: process %d (gpumemd %q or its child) still runs after the timeout", hook, pid, strings.TrimSpace(string(b)))
				exec.Command("kill", "-9", f).Run()
			}
		}
	}
}

// alive says whether pid runs, waiting a moment for init to reap an orphan: a zombie is
// dead.
func alive(pid int) bool {
	for i := 0; i < 50; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		if _, rest, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(rest, "Z") {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// TestBadTimeoutRefused: a timeout= that is not whole seconds from 1 to 3600 fails the
// hook with the accepted range, and gpumemd is not run.
func TestBadTimeoutRefused(t *testing.T) {
	bin := harness(t)
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	gpumemd := standIn(t, dir, "gpumemd", "touch "+ran)
	for _, v := range []string{"0", "-5", "abc", "3601", "", "10s", "99999999999999999999"} {
		rc, log, _ := run(t, bin, "prolog", "timeout="+v, gpumemd)
		if rc != -1 || !strings.Contains(log, "bad timeout="+v+": the timeout is whole seconds, 1 to 3600") {
			t.Errorf("timeout=%s: rc %d, logged %q; want -1 and the accepted range", v, rc, log)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("gpumemd ran under a bad timeout")
	}
	if rc, log, _ := run(t, bin, "prolog", "timeout=3600", gpumemd); rc != 0 || log != "" {
		t.Errorf("timeout=3600: rc %d, logged %q; want accepted", rc, log)
	}
}
