package main

import (
	"context"
	"log/slog"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/gresconf"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmconf"
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
	rel  *gresconf.Release // asked of slurmd on the first write
	hook chan struct{}     // a token: at most one hook runs at a time

	fenceWhy map[int]string // per GPU, why it holds no driver fence, as last logged
	// fences is each GPU's fence by NVML index as last written into the inventory, for
	// the metrics; written here, read by the poll (a MIG apply may write too).
	fences atomic.Pointer[map[int]string]
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
	p := gresconf.Pipeline{Out: w.opt.GresConf, Hook: w.runHook}
	if w.opt.WriteInventory {
		p.InventoryDir, p.Merge = w.opt.InventoryDir, true
	}
	var rel gresconf.Release
	p.Wrote = func(path string, changed bool) {
		switch {
		case !changed:
		case path != w.opt.GresConf:
			w.log.Info("inventory written", "path", path)
		default:
			if confErr != nil {
				w.log.Warn("gres.conf written without slurmd -G: slurm.conf unreadable", "err", confErr)
			}
			w.log.Info("gres.conf written", "path", path, "slurm", rel.String())
		}
	}
	if w.opt.WriteGres {
		p.Render = func() (gresconf.Options, error) {
			var opt gresconf.Options
			var err error
			opt, err = w.renderOptions()
			rel = opt.Slurm
			return opt, err
		}
	}
	// Without slurm.conf slurmd -G has no node to check against; the file still goes
	// in, since a node that lost its gres.conf is worse off than one with an unchecked one.
	if confErr == nil {
		p.Check = gresconf.CheckWith(w.opt.Shared.SlurmConf, []string{w.node}, func() {
			w.log.Warn("slurmd not installed: gres.conf written without slurmd -G", "path", w.opt.GresConf)
		})
	}
	_, err := p.Run(func() (inventory.Cluster, error) {
		node, err := discover.Node(w.src, discover.OptionsFor(w.src, w.node))
		if err != nil {
			return inventory.Cluster{}, err
		}
		w.setFences(&node, fenceProbe(w.opt, conf, confErr))
		c := inventory.Cluster{Nodes: []inventory.Node{node}}
		if confErr == nil {
			conf.Annotate(&c) // partitions, so the plugins can route by pool
		}
		return c, nil
	})
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
// before 23.02.7 need MIG instances written differently (gresconf.Release).
func (w *gresWriter) release() (gresconf.Release, error) {
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
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", w.opt.GresHook)
		cmd.WaitDelay = 5 * time.Second // a hook that leaves a child on its pipe still ends
		out, err := cmd.CombinedOutput()
		if err != nil {
			w.log.Error("gres hook failed", "hook", w.opt.GresHook, "err", err, "output", string(out))
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
