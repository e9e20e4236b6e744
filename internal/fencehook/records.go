package fencehook

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/fence"
)

// ReadRecord is what the prolog recorded for job id in stateDir; false for nothing (or
// anything unreadable: the directory is root's, but a bad file counts as none).
func ReadRecord(stateDir, id string) (fence.Record, bool) {
	if _, err := fence.ParseJobID(id); err != nil || stateDir == "" {
		return fence.Record{}, false
	}
	b, err := atomicfile.ReadCapped(filepath.Join(stateDir, id), fence.MaxRecord)
	if err != nil {
		return fence.Record{}, false
	}
	r, err := fence.ParseRecord(b, id)
	return r, err == nil
}

// JobFence is the fence the prolog recorded for job id, "" when none (or when the job
// held no GPU there, or its fence failed).
func JobFence(stateDir, id string) string {
	r, ok := ReadRecord(stateDir, id)
	if !ok {
		return ""
	}
	return r.Held()
}

// record leaves the job's fence where `gpumemd task-prolog` (run as the job's user)
// reads it, where `gpumemd fence-check` finds that the prolog finished for it, and
// where the epilog and the sweep find the cgroup whose limits to clear.
func (j Job) record(r fence.Record) error {
	if j.Conf.FenceState == "" {
		return nil
	}
	if err := os.MkdirAll(j.Conf.FenceState, 0o755); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(j.Conf.FenceState, j.ID), r.Encode(), 0o644)
}

func (j Job) forget() {
	if j.ID != "" && j.Conf.FenceState != "" {
		_ = os.Remove(filepath.Join(j.Conf.FenceState, j.ID))
	}
}

// Clear lifts the limits of record r, if its cgroup is still the directory the prolog
// set them on; a directory gone (or made anew) took its limits with it.
func Clear(env Env, nvmlSpec string, r fence.Record) error {
	id, err := fence.CgroupID(env.Lstat, r.Cgroup)
	if err != nil || id != r.CgroupID {
		return nil
	}
	lib, _, closeLib, err := env.OpenNVML(nvmlSpec)
	if err != nil {
		return fmt.Errorf("limits on %s not cleared: %w", r.Cgroup, err)
	}
	defer closeLib()
	limits := make([]fence.Limit, len(r.GPUs))
	for i, g := range r.GPUs {
		limits[i] = fence.Limit{GPU: g}
	}
	if err := fence.Clear(lib, r.Cgroup, limits); err != nil {
		return fmt.Errorf("limits on %s not cleared: %w", r.Cgroup, err)
	}
	return nil
}

// Holding says which jobs hold their allocation on node (squeue's answer, by job id).
type Holding func(ctx context.Context, node string) (map[string]string, error)

// Sweep clears the limits that outlived their job and removes their records: a record
// in stateDir the epilog never removed (gpumemd killed in the prolog or epilog, slurmd
// restarted, the node rebooted into a kept /run, an epilog Slurm started without root)
// for a job Slurm no longer runs here. A job Slurm says still runs here keeps its
// limit; when Slurm cannot say, nothing is cleared. A record written after Slurm
// answered is left for the next sweep: it may be a requeued job's new run, which
// Slurm's answer predates.
func Sweep(stateDir, nvmlSpec, node string, env Env, holding Holding, log *slog.Logger) (cleared int) {
	if stateDir == "" {
		return 0
	}
	entries, err := os.ReadDir(stateDir)
	if err != nil || len(entries) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	asked := time.Now()
	running, err := holding(ctx, node)
	if err != nil {
		log.Warn("fence sweep: Slurm cannot say which jobs run here; no limit cleared", "err", err)
		return 0
	}
	for _, e := range entries {
		id := e.Name()
		if _, err := fence.ParseJobID(id); err != nil {
			continue // not a record (an atomic write's temporary file, say)
		}
		if _, runs := running[id]; runs {
			continue
		}
		path := filepath.Join(stateDir, id)
		before, err := os.Lstat(path)
		if err != nil || !before.ModTime().Before(asked) {
			continue
		}
		// The prolog writes a record whole under a new inode, so the file still there
		// after reading it is the one judged, and what was read is that file's.
		judged := func() bool {
			now, err := os.Lstat(path)
			return err == nil && os.SameFile(before, now) && now.ModTime().Equal(before.ModTime())
		}
		r, ok := ReadRecord(stateDir, id)
		if !judged() {
			continue
		}
		if ok && r.Cgroup != "" {
			if err := Clear(env, nvmlSpec, r); err != nil {
				log.Warn("fence sweep: a limit left by an ended job not cleared", "job", id, "err", err)
				continue
			}
			cleared++
			log.Info("fence sweep: cleared the limits an ended job left", "job", id, "cgroup", r.Cgroup, "gpus", r.GPUs)
		}
		if judged() {
			_ = os.Remove(path)
		}
	}
	return cleared
}
