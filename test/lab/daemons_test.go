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
