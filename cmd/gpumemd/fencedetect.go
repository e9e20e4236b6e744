package main

import (
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
	switch {
	case confErr != nil:
		p.Hook = "slurm.conf unreadable: " + confErr.Error()
	case !strings.Contains(conf.Params["prolog"], "gpumemd") && !strings.Contains(conf.Params["prolog"], "gpumem-prolog"):
		p.Hook = "slurm.conf's Prolog is not gpumemd's prolog"
	case !hasFlag(conf.Params["prologflags"], "runinjob"):
		// Without RunInJob (and on 22.05, which has no such flag) the prolog runs in
		// slurmd before the job's cgroup exists.
		p.Hook = "slurm.conf's PrologFlags lack RunInJob (Slurm 24.05 or later): the prolog would run before the job's cgroup exists"
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
