package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/gresconf"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmconf"
	"github.com/gpumem/gpumem/internal/slurmrel"
)

// gresWriter keeps gres.conf and this node's inventory in step with NVML. Discovery
// (MIG layout, CPU affinity) is slower than a poll and changes rarely, so it runs once
// per GresInterval; an unchanged result rewrites nothing.
type gresWriter struct {
	opt  options
	node string
	src  *nvmlsrc.Source
	log  *slog.Logger
	last time.Time
	rel  *slurmrel.Version // asked of slurmd on the first write
	hook chan struct{}     // a token: at most one hook runs at a time

	fenceWhy map[int]string // per GPU, why it holds no driver fence, as last logged
	// fences is each GPU's fence by NVML index as last written into the inventory, for
	// the metrics; written here, read by the poll (a MIG apply may write too).
	fences atomic.Pointer[map[int]string]
	// backend is how the driver holds a limit here (dmem or misc), as last probed.
	backend atomic.Pointer[string]
}

// FenceBackend is the driver fence's backend on this node as last probed, "" before.
func (w *gresWriter) FenceBackend() string {
	if b := w.backend.Load(); b != nil {
		return *b
	}
	return ""
}

// Fences is each GPU's fence, by NVML index, as the inventory last said; nil before the
// first write.
func (w *gresWriter) Fences() map[int]string {
	if m := w.fences.Load(); m != nil {
		return *m
	}
	return nil
}

func newGresWriter(opt options, node string, src *nvmlsrc.Source, log *slog.Logger) *gresWriter {
	w := &gresWriter{opt: opt, node: node, src: src, log: log, hook: make(chan struct{}, 1)}
	w.hook <- struct{}{}
	return w
}

func (w *gresWriter) maybeWrite(now time.Time) error {
	if !w.last.IsZero() && now.Sub(w.last) < w.opt.GresInterval {
		return nil
	}
	w.last = now
	return w.write()
}

// write runs the gres.conf pipeline on this node's GPUs, as far as the options ask.
// With WriteInventory, gres.conf covers every node of the inventory directory, so a
// gres.conf on a shared /etc/slurm describes the whole cluster.
func (w *gresWriter) write() error {
	conf, confErr := slurmconf.ParseFile(w.opt.Shared.SlurmConf)
	node, err := discover.Node(w.src, discover.OptionsFor(w.src, w.node))
	if err != nil {
		return err
	}
	p, done := fenceProbe(w.opt, conf, confErr)
	w.setFences(&node, p)
	done()
	in := gresconf.Input{Cluster: inventory.Cluster{Nodes: []inventory.Node{node}}, Out: w.opt.GresConf}
	if confErr == nil {
		conf.Annotate(&in.Cluster) // partitions, so the plugins can route by pool
	}
	if w.opt.WriteInventory {
		in.InventoryDir, in.Merge = w.opt.InventoryDir, true
	}
	// The options ask slurmd -V for the release; where that fails the inventory is
	// still written, and the failure returned after it.
	var optErr error
	if w.opt.WriteGres {
		var opt gresconf.Options
		if opt, optErr = w.renderOptions(); optErr == nil {
			in.Options = &opt
		}
	}
	// Without slurm.conf slurmd -G has no node to check against; the file still goes
	// in, since a node that lost its gres.conf is worse off than one with an unchecked one.
	if confErr == nil {
		in.Check = gresconf.Check{SlurmConf: w.opt.Shared.SlurmConf, Nodes: []string{w.node}}
	}
	res, err := gresconf.Build(in)
	for _, f := range res.Inventory {
		if f.Changed {
			w.log.Info("inventory written", "path", f.Path)
		}
	}
	if res.Unchecked {
		w.log.Warn("slurmd not installed: gres.conf written without slurmd -G", "path", w.opt.GresConf)
	}
	if res.Changed {
		if confErr != nil {
			w.log.Warn("gres.conf written without slurmd -G: slurm.conf unreadable", "err", confErr)
		}
		w.log.Info("gres.conf written", "path", w.opt.GresConf, "slurm", in.Options.Slurm.String())
		w.runHook()
	}
	if err == nil {
		err = optErr
	}
	return err
}

// renderOptions are how gres.conf and the node's Gres= are written here.
func (w *gresWriter) renderOptions() (gresconf.Options, error) {
	rel, err := w.release()
	return gresconf.Options{ShardUnitMiB: w.opt.Shared.ShardUnitMiB, DevPrefix: w.opt.GresDevPrefix,
		Slurm: rel, ShardTypes: w.opt.Shared.ShardTypes == config.ShardTypesPerGPU}, err
}

// nodeGres is this node's slurm.conf Gres= value for the GPUs it has now, written as
// gres.conf is.
func (w *gresWriter) nodeGres() (string, error) {
	opt, err := w.renderOptions()
	if err != nil {
		return "", err
	}
	node, err := discover.Node(w.src, discover.OptionsFor(w.src, w.node))
	if err != nil {
		return "", err
	}
	return gresconf.NodeGres(node, opt)
}

// release is the Slurm release gres.conf is for, asked of slurmd once: releases
// before 23.02.7 need MIG instances written differently (the release table's multiple-files gate).
func (w *gresWriter) release() (slurmrel.Version, error) {
	if w.rel != nil {
		return *w.rel, nil
	}
	rel, err := gresconf.ResolveRelease(w.opt.SlurmVersion)
	if err != nil {
		return rel, err
	}
	w.rel = &rel
	return rel, nil
}

// runHook starts the configured command in the background, so a slow slurmd restart
// never delays polling; a change while a hook runs does not start a second one.
func (w *gresWriter) runHook() {
	if w.opt.GresHook == "" {
		return
	}
	select {
	case <-w.hook:
	default:
		w.log.Warn("gres hook still running; not started again", "hook", w.opt.GresHook)
		return
	}
	go func() {
		defer func() { w.hook <- struct{}{} }()
		h := slurmcli.Hook{Name: "gres hook", Command: w.opt.GresHook, Timeout: slurmcli.HookTimeout}
		if err := h.Run(context.Background()); err != nil {
			w.log.Error("gres hook failed", "hook", w.opt.GresHook, "err", err)
			return
		}
		w.log.Info("gres hook ran", "hook", w.opt.GresHook)
	}()
}

// wait lets a running hook finish, up to d, so shutdown leaves nothing behind.
func (w *gresWriter) wait(d time.Duration) {
	select {
	case <-w.hook:
	case <-time.After(d):
	}
}
