package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/slurmconf"
)

// fenceProbe is what this node answers about the driver fence, outside NVML: whether
// Slurm runs gpumemd's prolog inside the job's cgroup (slurm.conf), and whether the
// cgroup2 hierarchy offers the dmem controller (the kernel).
func fenceProbe(opt options, conf *slurmconf.Conf, confErr error) fence.Probe {
	var p fence.Probe
	if confErr != nil {
		p.Hook = "slurm.conf unreadable: " + confErr.Error()
	} else {
		p.Hook = fenceHook(conf, opt.Shared.SlurmConf)
	}
	root := opt.FenceCgroupRoot
	if b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err != nil {
		p.Dmem = "no cgroup2 hierarchy at " + root + " (cgroup.controllers: " + err.Error() + ")"
	} else if !fence.HasDmem(b) {
		p.Dmem = "the kernel offers no dmem cgroup controller at " + root + " (Linux 6.14+, CONFIG_CGROUP_DMEM)"
	}
	p.Dir = filepath.Join(root, opt.FenceCgroupScope)
	if fi, err := os.Stat(p.Dir); err != nil || !fi.IsDir() {
		p.Dir = root
	}
	return p
}

// SpankPlugin is the file name of gpumem's SPANK plugin (cgo/spank).
const SpankPlugin = "spank_gpumem.so"

// fenceHook is "" when Slurm runs gpumemd's hook as root after the job's cgroup exists
// and before the job's first step, else why not. Two ways do (docs/gpumemd.md): the
// Prolog with PrologFlags=RunInJob (24.05 and later), or gpumem's SPANK plugin, required
// in plugstack.conf, in the extern step that PrologFlags=Contain starts (any release;
// the only way on 22.05, whose Prolog runs in slurmd before the cgroup exists).
func fenceHook(conf *slurmconf.Conf, confPath string) string {
	flags := conf.Params["prologflags"]
	prolog := conf.Params["prolog"]
	if (strings.Contains(prolog, "gpumemd") || strings.Contains(prolog, "gpumem-prolog")) && hasFlag(flags, "runinjob") {
		return ""
	}
	stack := slurmconf.PlugStackPath(conf, confPath)
	spank, err := slurmconf.RequiresSpank(stack, SpankPlugin)
	switch {
	case spank && (hasFlag(flags, "contain") || hasFlag(flags, "runinjob")):
		return ""
	case spank:
		return "plugstack.conf requires " + SpankPlugin + " but slurm.conf's PrologFlags lack Contain: no extern step runs it before the job"
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "neither slurm.conf's Prolog with PrologFlags=RunInJob nor a readable plugstack.conf: " + err.Error()
	}
	return "neither gpumemd's prolog with PrologFlags=Contain,RunInJob (Slurm 24.05 or later) nor " + SpankPlugin + " required in " + stack + " with PrologFlags=Contain: nothing sets the limit after the job's cgroup exists"
}

func hasFlag(list, flag string) bool {
	for _, f := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(f), flag) {
			return true
		}
	}
	return false
}

// setFences fills each GPU's Fence from what this node really answers, and logs why a
// GPU holds none when that changes.
func (w *gresWriter) setFences(node *inventory.Node, p fence.Probe) {
	fences, why := fence.Detect(fence.NVML{Interface: w.src.NVML}, node.GPUs, p)
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
