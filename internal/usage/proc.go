package usage

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// Owner is the Slurm job that runs a process and the shards it holds on this node.
type Owner struct {
	JobID  string // "" when the process belongs to no Slurm job
	Shards int    // 0 when the job holds no shards
	// Unknown is set when Slurm runs the process in JobID but its allocation could
	// not be read: the job is measured, and no policy acts on it.
	Unknown bool
	// Meta labels the job (user, account, partition); empty where Slurm's record did
	// not say.
	Meta slurmcli.Meta
	// GPUs are the gpu GRES indices Slurm gave the job on this node (whole GPUs and
	// MIG instances, in gres.conf order); nil when Slurm did not say which. GPUCount
	// is how many it was given, also when squeue alone said so.
	GPUs     []int
	GPUCount int
	// Ended is set once Slurm says the job ended: its processes still on the GPUs are
	// orphans, not its use.
	Ended bool
}

// processUID is the real uid of a process, from /proc/PID/status, which the kernel
// writes: a process cannot claim another user's uid there.
func processUID(proc string, pid int) (int, error) {
	f, err := os.Open(filepath.Join(proc, strconv.Itoa(pid), "status"))
	if err != nil {
		return -1, fmt.Errorf("process %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				if uid, err := strconv.Atoi(fields[0]); err == nil {
					return uid, nil
				}
			}
			break
		}
	}
	return -1, fmt.Errorf("process %d: no Uid in its status", pid)
}

// processStart is when a process started, in clock ticks since boot (field 22 of
// /proc/PID/stat): with the PID it names one process for good, so a PID reused by
// another process is never mistaken for the one seen before.
func processStart(proc string, pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces or ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("process %d: stat without a command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("process %d: stat has %d fields after the name", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}
