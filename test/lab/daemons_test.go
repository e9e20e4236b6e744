// Package lab holds the tests of the lab's shell functions that can run without a lab:
// each sources the one file it tests, with stand-ins for what lab.sh would define.
package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// guard runs script after daemons.sh with lab.sh's die and daemon_pids stood in for:
// mine is what daemon_pids prints, the pids the lab's pid files name.
func guard(t *testing.T, proc, mine, script string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", `set -euo pipefail
ROOT=
die() { echo "die: $*" >&2; exit 1; }
daemon_pids() { printf '%s\n' $MINE; }
. ./daemons.sh
`+script)
	cmd.Env = append(os.Environ(), "LAB_PROC="+proc, "MINE="+mine)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// fakeProc writes a /proc with one process per name: its comm, its cmdline, and its root
// (/, or a chroot's folder where root is not empty).
func fakeProc(t *testing.T, procs map[int][2]string) string {
	t.Helper()
	dir := t.TempDir()
	for pid, p := range procs {
		d := filepath.Join(dir, strconv.Itoa(pid))
		root := p[1]
		if root == "" {
			root = "/"
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "comm"), []byte(p[0]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cmdline"), []byte("/usr/sbin/"+p[0]+"\x00-D\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(root, filepath.Join(d, "root")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestForeignDaemonsNamesEachDaemonName: each name Debian's daemons run as is found, the
// 13-character -wlm names included; the lab's own, a chroot's and other Slurm programs
// are not; and a machine with none passes without a word.
func TestForeignDaemonsNamesEachDaemonName(t *testing.T) {
	quiet := fakeProc(t, map[int][2]string{
		100: {"slurmctld", ""},                // the lab's own (its pid file names it)
		101: {"slurmd-wlm", "/var/cache/lab"}, // a chroot's
		102: {"slurmdbd", ""},                 // not a daemon the guard is about
		103: {"slurmstepd", ""},               // nor this
		104: {"bash", ""},
	})
	out, errs, err := guard(t, quiet, "100", "foreign_daemons; echo ok")
	if err != nil || out != "ok\n" || errs != "" {
		t.Fatalf("no foreign daemon: err %v, stdout %q, stderr %q; want ok and nothing on stderr", err, out, errs)
	}
	for _, name := range []string{"slurmctld", "slurmctld-wlm", "slurmd", "slurmd-wlm"} {
		proc := fakeProc(t, map[int][2]string{100: {"slurmctld", ""}, 4242: {name, ""}})
		_, errs, err := guard(t, proc, "100", "foreign_daemons; echo ok")
		if err == nil || !strings.Contains(errs, "pid 4242, /usr/sbin/"+name+" -D") {
			t.Errorf("foreign %s: err %v, stderr %q; want the guard to name pid 4242", name, err, errs)
		}
	}
}

// TestForeignDaemonsFindsARunningProcess: on the real /proc, a process started as
// slurmctld-wlm (a copy of sleep, not Slurm) is found by its name.
func TestForeignDaemonsFindsARunningProcess(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep to run as a stand-in daemon")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"slurmctld-wlm", "slurmd"} {
		exe := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := strconv.Itoa(cmd.Process.Pid)
		// comm is set at exec: wait until the child is past it.
		for i := 0; i < 100; i++ {
			if c, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSpace(string(c)) == name {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		out, _, err := guard(t, "/proc", "", "slurm_daemon_pids")
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err != nil || !strings.Contains("\n"+out, "\n"+pid+"\n") {
			t.Errorf("%s (pid %s): err %v, slurm_daemon_pids printed %q; want its pid", name, pid, err, out)
		}
	}
}

// TestRestartUnregisteredRestartsOnlyWhatDidNotRegister: of three nodes, the idle one's
// slurmd is left alone, the one whose slurmd runs but never registered is killed and
// started again with the end of its log shown, and the one whose slurmd is gone is
// started again; each is said out loud.
func TestRestartUnregisteredRestartsOnlyWhatDidNotRegister(t *testing.T) {
	lab := t.TempDir()
	for _, d := range []string{"run", "log"} {
		if err := os.Mkdir(filepath.Join(lab, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	daemon := func(node string) (*exec.Cmd, chan struct{}) {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Skipf("no sleep to stand in for slurmd: %v", err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }() // reaped at once: a zombie would read as alive
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
		pid := strconv.Itoa(cmd.Process.Pid)
		if err := os.WriteFile(filepath.Join(lab, "run", "slurmd-"+node+".pid"), []byte(pid+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return cmd, done
	}
	_, idleDone := daemon("n1")
	stuck, stuckDone := daemon("n2")
	if err := os.WriteFile(filepath.Join(lab, "log", "slurmd-n2.log"), []byte("[t] slurmd started\n[t] CPUs=16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `set -euo pipefail
ROOT=
say() { echo "lab: $*"; }
lab_in() { [ "$1" = sinfo ] && printf 'n1 idle\nn2 unknown*\nn3 down*\nn1 idle\n'; }
pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pidfile_pid() { cat "$1" 2>/dev/null || true; }
poll() { local n=$(($1 * 10)); shift; for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done; return 1; }
start_slurmd() { echo "$1" >>"$LAB/started"; }
. ./daemons.sh
restart_unregistered 42
echo done`)
	cmd.Env = append(os.Environ(), "LAB="+lab)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "done\n") {
		t.Fatalf("restart_unregistered: %v\n%s", err, out)
	}
	select {
	case <-stuckDone:
	case <-time.After(5 * time.Second):
		t.Errorf("n2's stand-in slurmd (pid %d) still runs", stuck.Process.Pid)
	}
	select {
	case <-idleDone:
		t.Errorf("n1's slurmd, idle, was killed")
	default:
	}
	started, _ := os.ReadFile(filepath.Join(lab, "started"))
	if string(started) != "n2\nn3\n" {
		t.Errorf("slurmd started again for %q; want n2 and n3, once each", started)
	}
	for _, want := range []string{
		"lab: node n2 is unknown* 42s after its slurmd (pid " + strconv.Itoa(stuck.Process.Pid) + ") started: restarting it",
		"    [t] CPUs=16",
		"lab: node n3 is down* and its slurmd is not running: starting it again",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
