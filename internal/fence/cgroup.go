package fence

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// DefaultScope is where Slurm's cgroup/v2 plugin puts its job cgroups below the cgroup2
// mount on a node whose init runs in the root cgroup: "system.slice/slurmstepd.scope"
// on 22.05 and 24.11 (fixed) and on 26.05 (CgroupSlice, default system.slice). A
// slurmd built with --enable-multiple-slurmd names it NODE_slurmstepd.scope.
const DefaultScope = "system.slice/slurmstepd.scope"

// JobCgroup is the job's cgroup v2 directory as Slurm's cgroup/v2 plugin makes it:
// ROOT/SCOPE/job_ID. It is built from the job id slurmd gives its prolog and the
// admin's settings only; nothing the job's user can write goes into it.
func JobCgroup(root, scope string, jobID uint64) (string, error) {
	if !path.IsAbs(root) || path.Clean(root) != root {
		return "", fmt.Errorf("fence: cgroup root %q; want a clean absolute path such as /sys/fs/cgroup", root)
	}
	if scope == "" || path.IsAbs(scope) || path.Clean(scope) != scope || strings.HasPrefix(scope, "..") {
		return "", fmt.Errorf("fence: cgroup scope %q; want a relative path below the root such as %s", scope, DefaultScope)
	}
	if jobID == 0 {
		return "", fmt.Errorf("fence: job id 0")
	}
	return path.Join(root, scope, "job_"+strconv.FormatUint(jobID, 10)), nil
}

// ParseJobID reads the job id slurmd put in the prolog's environment.
func ParseJobID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("SLURM_JOB_ID=%q is not a job id", s)
	}
	return id, nil
}

// Stat is what CheckDir needs of a path: lstat, so a symlink is seen as one.
type Stat func(name string) (fs.FileInfo, error)

// CheckDir refuses a job cgroup that is not a real directory owned by root: the
// limit must land on the cgroup Slurm made, never on one a user made or linked there.
func CheckDir(lstat Stat, dir string) error {
	fi, err := lstat(dir)
	if err != nil {
		return fmt.Errorf("fence: job cgroup %s: %w (is Slurm's cgroup/v2 plugin in use, and the hook run in the job's extern step: PrologFlags=Contain,RunInJob, or spank_gpumem.so with PrologFlags=Contain?)", dir, err)
	}
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("fence: job cgroup %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
		return fmt.Errorf("fence: job cgroup %s is owned by uid %d, not root", dir, st.Uid)
	}
	return nil
}

// InJob checks the prolog's own cgroup (its /proc/self/cgroup) against the job's: with
// PrologFlags=RunInJob (or through spank_gpumem.so) slurmstepd starts the prolog inside
// the job's extern step, so
// the prolog's cgroup v2 path lies below the job's. This proves the path is the one
// Slurm made for this job, on whatever slice and scope the release chose.
func InJob(procSelfCgroup []byte, root, jobDir string) error {
	rel, ok := unifiedPath(procSelfCgroup)
	if !ok {
		return fmt.Errorf("fence: this process is in no cgroup v2 group (cgroup v1 only): the driver fence needs Slurm's cgroup/v2")
	}
	self := path.Join(root, rel)
	if self != jobDir && !strings.HasPrefix(self, jobDir+"/") {
		return fmt.Errorf("fence: the prolog runs in %s, not below the job's cgroup %s: run it as the Prolog with PrologFlags=Contain,RunInJob (Slurm 24.05 or later) or from spank_gpumem.so with PrologFlags=Contain, and check CgroupMountpoint", self, jobDir)
	}
	return nil
}

// unifiedPath is the cgroup v2 line ("0::/path") of a /proc/PID/cgroup file.
func unifiedPath(b []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok && path.IsAbs(p) {
			return path.Clean(p), true
		}
	}
	return "", false
}

// HasDmem reports whether a cgroup.controllers file lists the dmem controller, which
// the driver's per-cgroup limit needs (Linux 6.14+, CONFIG_CGROUP_DMEM).
func HasDmem(controllers []byte) bool {
	for _, c := range strings.Fields(string(controllers)) {
		if c == "dmem" {
			return true
		}
	}
	return false
}
