package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

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
	hook chan struct{} // a token: at most one hook runs at a time
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
	dopt := discover.Options{NodeName: w.node}
	if w.src.Kind == nvmlsrc.KindReal {
		// NVML's affinity lists logical CPUs; gres.conf wants Slurm's core numbers.
		if m, err := discover.SysfsCoreMap("/sys/devices/system/cpu"); err == nil {
			dopt.CoreMap = m
		}
	}
	node, err := discover.Node(w.src, dopt)
	if err != nil {
		return err
	}
	c := inventory.Cluster{Nodes: []inventory.Node{node}}
	conf, confErr := slurmconf.ParseFile(w.opt.Shared.SlurmConf)
	if confErr == nil {
		conf.Annotate(&c) // partitions, so the plugins can route by pool
	}
	if w.opt.WriteInventory {
		if c, err = w.writeInventory(c); err != nil {
			return err
		}
	}
	if !w.opt.WriteGres {
		return nil
	}
	data, err := gresconf.Render(c, gresconf.Options{ShardUnitMiB: w.opt.Shared.ShardUnitMiB, DevPrefix: w.opt.GresDevPrefix})
	if err != nil {
		return err
	}
	var check func([]byte) error
	if confErr == nil {
		v := gresconf.Slurmd{SlurmConf: w.opt.Shared.SlurmConf, Nodes: []string{w.node}}
		check = func(b []byte) error {
			if _, err := v.Check(b); err != nil && !errors.Is(err, gresconf.ErrNoSlurmd) {
				return err
			}
			return nil
		}
	}
	changed, err := gresconf.Install(w.opt.GresConf, data, check)
	if err != nil {
		return err
	}
	if changed {
		w.log.Info("gres.conf written", "path", w.opt.GresConf)
		w.runHook()
	}
	return nil
}

// writeInventory installs NODE.json and returns every node of the directory, so a
// gres.conf on a shared /etc/slurm describes the whole cluster.
func (w *gresWriter) writeInventory(c inventory.Cluster) (inventory.Cluster, error) {
	data, err := c.Encode()
	if err != nil {
		return c, err
	}
	if err := os.MkdirAll(w.opt.InventoryDir, 0o755); err != nil {
		return c, fmt.Errorf("inventory: %w", err)
	}
	p := filepath.Join(w.opt.InventoryDir, w.node+".json")
	changed, err := gresconf.Install(p, data, nil)
	if err != nil {
		return c, err
	}
	if changed {
		w.log.Info("inventory written", "path", p)
	}
	return inventory.LoadPath(w.opt.InventoryDir)
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
		out, err := exec.CommandContext(ctx, "/bin/sh", "-c", w.opt.GresHook).CombinedOutput()
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
