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

// Slurm's cgroup/v2 plugin puts each job in a directory of its own below a scope it
// makes for slurmstepd: "system.slice/slurmstepd.scope" on a node whose init runs in
// the root cgroup (22.05 and 24.11 fixed; 26.05 under CgroupSlice, system.slice by
// default), "NODE_slurmstepd.scope" where several slurmd run on one host
// (--enable-multiple-slurmd). The job's directory is "job_ID" up to 25.11 and, from
// 26.05 on, the job's SLUID ("s" and 13 base-32 characters) unless cgroup.conf asks
// for job ids. gpumem does not rebuild that name: the hook runs inside the job's
// extern step, so Slurm has already put it in the job's directory, and FindJobCgroup
// reads the directory from the hook's own /proc/self/cgroup.

// scopeSuffix ends the name of every scope Slurm's cgroup/v2 makes for slurmstepd.
const scopeSuffix = "slurmstepd.scope"

// FindJobCgroup is the cgroup v2 directory of job jobID, read from procSelfCgroup (the
// hook's own /proc/self/cgroup, which slurmstepd set when it started the hook in the
// job's extern step) below root (the cgroup2 mount). The path must run through a
// slurmstepd scope (and, when scope is not "", through exactly that scope), then a job
// directory named for this job (job_ID) or by Slurm's SLUID, then a step directory.
// Nothing the job's user writes is read: a user can make sub-cgroups only below their
// own step, and the first directory below the scope is the job's.
func FindJobCgroup(procSelfCgroup []byte, root, scope string, jobID uint64) (string, error) {
	if !path.IsAbs(root) || path.Clean(root) != root {
		return "", fmt.Errorf("fence: cgroup root %q; want a clean absolute path such as /sys/fs/cgroup", root)
	}
	if scope != "" && (path.IsAbs(scope) || path.Clean(scope) != scope || strings.HasPrefix(scope, "..")) {
		return "", fmt.Errorf("fence: cgroup scope %q; want a relative path below the root such as system.slice/slurmstepd.scope", scope)
	}
	rel, ok := unifiedPath(procSelfCgroup)
	if !ok {
		return "", fmt.Errorf("fence: this process is in no cgroup v2 group (cgroup v1 only): the driver fence needs Slurm's cgroup/v2")
	}
	parts := strings.Split(strings.TrimPrefix(rel, "/"), "/")
	at := -1
	for i, p := range parts {
		if p == scopeSuffix || strings.HasSuffix(p, "_"+scopeSuffix) {
			at = i
			break
		}
	}
	where := func() string { return path.Join(root, rel) }
	if at < 0 || at+2 >= len(parts) {
		return "", fmt.Errorf("fence: the hook runs in %s, not in a job step below Slurm's slurmstepd scope: run it as the Prolog with PrologFlags=Contain,RunInJob (Slurm 24.05 or later) or from %s with PrologFlags=Contain, with Slurm's cgroup/v2 plugin", where(), SpankPlugin)
	}
	scopeDir := strings.Join(parts[:at+1], "/")
	if scope != "" && scopeDir != scope {
		return "", fmt.Errorf("fence: the hook runs below %s, not below FenceCgroupScope %s", path.Join(root, scopeDir), path.Join(root, scope))
	}
	job, step := parts[at+1], parts[at+2]
	switch {
	case job == "job_"+strconv.FormatUint(jobID, 10):
	case strings.HasPrefix(job, "job_"):
		return "", fmt.Errorf("fence: the hook runs in %s, another job's cgroup than job %d's", where(), jobID)
	case !IsSLUID(job):
		return "", fmt.Errorf("fence: the hook runs in %s, whose job directory %q is neither job_%d nor a Slurm SLUID", where(), job, jobID)
	}
	if !strings.HasPrefix(step, "step_") {
		return "", fmt.Errorf("fence: the hook runs in %s, not in a step of the job", where())
	}
	return path.Join(root, scopeDir, job), nil
}

// IsSLUID reports whether s is a Slurm 26.05 SLUID as its cgroup/v2 plugin names a
// job's directory (cgroup.conf(5): "sEKNKTV3WPV500"): "s" and 13 characters of
// Crockford's base 32.
func IsSLUID(s string) bool {
	if len(s) != 14 || s[0] != 's' {
		return false
	}
	for _, c := range strings.ToUpper(s[1:]) {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' && c != 'I' && c != 'L' && c != 'O' && c != 'U') {
			return false
		}
	}
	return true
}

// ParseJobID reads the job id slurmd put in the prolog's environment.
func ParseJobID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("SLURM_JOB_ID=%q is not a job id", s)
	}
	return id, nil
}

// CgroupID is the inode of the job's cgroup directory, after CheckDir: the record
// names the directory by it, so that a limit is cleared only on that very directory.
func CgroupID(lstat Stat, dir string) (uint64, error) {
	if err := CheckDir(lstat, dir); err != nil {
		return 0, err
	}
	fi, _ := lstat(dir)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, nil
	}
	return 0, fmt.Errorf("fence: job cgroup %s: no inode", dir)
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
