package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/slurmconf"
)

// fenceProbe is what this node answers about the driver fence, outside NVML: whether
// Slurm runs gpumemd's prolog inside the job's cgroup (slurm.conf), whether a cgroup2
// hierarchy is mounted at FenceCgroupRoot and with which backend the driver will hold
// a limit there. It makes gpumemd's own probe cgroup (FenceCgroupRoot/gpumem.probe),
// which done removes once Detect has set, read and cleared a limit on it.
func fenceProbe(opt options, conf *slurmconf.Conf, confErr error) (p fence.Probe, done func()) {
	done = func() {}
	if confErr != nil {
		p.Hook = "slurm.conf unreadable: " + confErr.Error()
	} else {
		p.Hook = fenceHook(conf, opt.Shared.SlurmConf)
	}
	root := opt.FenceCgroupRoot
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		p.V2 = "no cgroup2 hierarchy at " + root + " (cgroup.controllers: " + err.Error() + "); set FenceCgroupRoot to cgroup.conf's CgroupMountpoint"
		return p, done
	}
	p.Backend = fence.BackendMisc
	if fence.HasDmem(b) {
		p.Backend = fence.BackendDmem
	}
	if p.Hook != "" {
		return p, done // no probe cgroup for a node that cannot fence anyway
	}
	dir := filepath.Join(root, probeCgroup)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		p.V2 = "cannot make gpumemd's probe cgroup " + dir + ": " + err.Error()
		return p, done
	}
	// A directory of that name that gpumemd did not make (a symlink, another owner)
	// is never probed.
	if err := fence.CheckDir(os.Lstat, dir); err != nil {
		p.V2 = err.Error()
		return p, done
	}
	p.Dir = dir
	return p, func() { _ = os.Remove(dir) }
}

// probeCgroup is the cgroup gpumemd makes below the cgroup2 root to probe the fence.
const probeCgroup = "gpumem.probe"

// fenceHook is "" when Slurm runs gpumemd's hook as root after the job's cgroup exists
// and before the job's first step, else why not (fence.HookProblem).
func fenceHook(conf *slurmconf.Conf, confPath string) string {
	stack := slurmconf.PlugStackPath(conf, confPath)
	return fence.HookProblem(fence.Hooks{
		Prolog:    conf.Params["prolog"],
		Contain:   conf.HasPrologFlag("contain"),
		RunInJob:  conf.HasPrologFlag("runinjob"),
		PlugStack: stack,
		Spank:     func() (bool, error) { return slurmconf.RequiresSpank(stack, fence.SpankPlugin) },
	})
}

// setFences fills each GPU's Fence from what this node really answers, and logs why a
// GPU holds none when that changes.
func (w *gresWriter) setFences(node *inventory.Node, p fence.Probe) {
	fences, why := fence.Detect(fence.NVML{Interface: w.src.NVML}, node.GPUs, p)
	w.backend.Store(&p.Backend)
	for i := range node.GPUs {
		node.GPUs[i].FenceBackend = ""
		if fences[i] == inventory.FenceDriver {
			node.GPUs[i].FenceBackend = p.Backend
		}
	}
	byIndex := make(map[int]string, len(node.GPUs))
	defer w.fences.Store(&byIndex)
	for i := range node.GPUs {
		node.GPUs[i].Fence = fences[i]
		byIndex[node.GPUs[i].Index] = fences[i]
		key := ""
		if why[i] != nil {
			key = why[i].Error()
		}
		if w.fenceWhy == nil {
			w.fenceWhy = map[int]string{}
		}
		if old, seen := w.fenceWhy[i]; !seen || old != key {
			w.fenceWhy[i] = key
			w.log.Info("GPU memory fence", "gpu", node.GPUs[i].Index, "fence", fences[i], "why", key)
		}
	}
}
