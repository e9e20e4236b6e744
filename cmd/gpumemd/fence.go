package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/fencehook"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// realFenceEnv is what the fence hooks (internal/fencehook) call out to on a node:
// slurmd's environment, the cgroup file system, NVML and Slurm's own commands.
func realFenceEnv() fencehook.Env {
	if os.Getenv("PATH") == "" {
		// slurmd gives its prolog no PATH: scontrol is looked up in the system's own
		// directories only, never in one a user could write.
		os.Setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
	}
	return fencehook.Env{Getenv: os.Getenv, ReadFile: os.ReadFile, Lstat: os.Lstat, OpenNVML: openFenceNVML,
		Allocated: slurmAllocation, Drain: drainUnlessReason, ResumeFence: resumeOwnFenceDrain, Now: time.Now, Sleep: time.Sleep, Euid: os.Geteuid}
}

func openFenceNVML(spec string) (fence.Lib, string, func(), error) {
	src, err := nvmlsrc.Open(spec)
	if err != nil {
		return nil, "", nil, err
	}
	return fence.NVML{Interface: src.NVML}, src.Kind, src.Close, nil
}

// slurmAllocation reads the job's GPUs and shards on node from slurmctld's own record
// of that job alone (an array task's, a hetjob component's): per GPU on 24.11 and later
// (shard:N(A/T,B/T)), by index on 22.05 (IDX:), never from the job's environment.
func slurmAllocation(ctx context.Context, scontrol, job, node string) ([]fence.Slice, error) {
	run := slurmcli.Scontrol(scontrol)
	run.Timeout = 20 * time.Second
	j, err := (&slurmcli.JobReader{Scontrol: run, Squeue: slurmcli.SqueueBeside(scontrol)}).One(ctx, job)
	if err != nil {
		return nil, err
	}
	return fencehook.SlicesOn(j, node)
}

// fenceNodeControl drains and resumes nodes through scontrol, 10 s a call.
func fenceNodeControl(scontrol string) slurmcli.ScontrolNode {
	run := slurmcli.Scontrol(scontrol)
	run.Timeout = 10 * time.Second
	return slurmcli.ScontrolNode{Run: run}
}

func drainUnlessReason(scontrol, node, reason string) error {
	return fencehook.DrainUnlessReason(fenceNodeControl(scontrol), node, reason)
}

func resumeOwnFenceDrain(scontrol, node, job string) (bool, error) {
	return fencehook.ResumeOwnDrain(fenceNodeControl(scontrol), node, job)
}

// loadFenceJob reads a hook's one flag, then its job (fencehook.Load).
func loadFenceJob(args []string, env fencehook.Env, cmd string) (fencehook.Job, error) {
	path := config.Path()
	switch {
	case len(args) == 2 && args[0] == "--config":
		path = args[1]
	case len(args) != 0:
		return fencehook.Job{}, fmt.Errorf("usage: gpumemd %s [--config gpumem.conf]", cmd)
	}
	return fencehook.Load(path, env.Getenv)
}

// fenceProlog is `gpumemd prolog` (fencehook.Prolog).
func fenceProlog(args []string, env fencehook.Env, stderr io.Writer) int {
	j, err := loadFenceJob(args, env, "prolog")
	return fencehook.Prolog(j, err, env, stderr)
}

// fenceCheck is `gpumemd fence-check` (fencehook.Check).
func fenceCheck(args []string, env fencehook.Env, stderr io.Writer) int {
	j, err := loadFenceJob(args, env, "fence-check")
	return fencehook.Check(j, err, env, stderr)
}

// fenceEpilog is `gpumemd epilog` (fencehook.Epilog).
func fenceEpilog(args []string, env fencehook.Env, stderr io.Writer) int {
	j, err := loadFenceJob(args, env, "epilog")
	return fencehook.Epilog(j, err, env, stderr)
}
