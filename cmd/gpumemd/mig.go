package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/migapply"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// migReconciler brings this node's MIG layout to its desired-layout file, one apply at
// a time, in the background: waiting for jobs may take minutes, and polling goes on.
type migReconciler struct {
	opt     config.MIG
	node    string
	log     *slog.Logger
	applier *migapply.Applier
	running atomic.Bool
	last    time.Time
	every   time.Duration
	said    string // the last dry-run plan logged, so it is logged once
	// atDesired: the layout matched the desired file at the last look, already logged.
	atDesired bool
	failures  atomic.Int64 // failed applies in a row
	retryAt   atomic.Int64 // unix ns before which a failed apply is not tried again
	deferred  string       // the last refusal by another apply, logged once (only the apply goroutine uses it)
}

func newMIG(opt options, node string, d *daemon) *migReconciler {
	m := &migReconciler{opt: opt.MIG, node: node, log: d.log, every: opt.GresInterval}
	m.applier = &migapply.Applier{
		Node: node, GPUs: migapply.NVML{Src: d.src}, Journal: opt.MIG.Journal, IdleTimeout: opt.MIG.IdleTimeout,
		Slurm: slurmcli.ScontrolNode{Run: slurmcli.Scontrol(opt.Scontrol)}, Log: logWriter{d.log},
		Poll: opt.PollInterval, Cmd: "gpumemd",
	}
	if d.gres != nil {
		m.applier.Regenerate = d.gres.write // the one gres.conf pipeline, hook included
		if opt.WriteGres {
			m.applier.NodeGres = d.gres.nodeGres
		}
	}
	if opt.MIG.Reload != "" {
		m.applier.Reload = func(nodeGres string) error { return runReload(opt.MIG.Reload, node, nodeGres) }
	}
	return m
}

// runReload runs the admin's reload command with the node and its new slurm.conf Gres=
// in its environment (GPUMEM_NODE, GPUMEM_NODE_GRES): slurmctld takes a changed count
// only from slurm.conf, which is the admin's to change, never gpumemd's.
func runReload(command, node, nodeGres string) error {
	h := slurmcli.Hook{Name: "MIG reload", Command: command, Timeout: slurmcli.ReloadHookTimeout,
		Env: []string{"GPUMEM_NODE=" + node, "GPUMEM_NODE_GRES=" + nodeGres}}
	return h.Run(context.Background())
}

// busy says gres.conf must be left alone: an apply runs or a crash left one behind.
func (m *migReconciler) busy() bool { return m.running.Load() || m.applier.Pending() }

// maybeStart looks at the desired layout once per gres interval and starts an apply
// when the node differs (or finishes one a crash left), unless one runs.
func (m *migReconciler) maybeStart(now time.Time) {
	if m.running.Load() || (!m.last.IsZero() && now.Sub(m.last) < m.every) || now.UnixNano() < m.retryAt.Load() {
		return
	}
	m.last = now
	want, err := m.desired()
	if err != nil {
		m.log.Error("desired MIG layout unreadable; nothing changed", "err", err)
		return
	}
	if want == nil && !m.applier.Pending() {
		return
	}
	if !m.opt.Apply {
		m.dryRun(want)
		return
	}
	if !m.applier.Pending() {
		// Checked once per gres interval: a node at its desired layout says so once.
		if changes, err := m.applier.Plan(want); err == nil && len(changes) == 0 {
			if !m.atDesired {
				m.log.Info("MIG layout is as desired; nothing to apply")
				m.atDesired = true
			}
			return
		}
		m.atDesired = false
	}
	m.running.Store(true)
	go func() {
		defer m.running.Store(false)
		var err error
		if want == nil {
			err = m.applier.Recover()
		} else {
			err = m.applier.Apply(want)
		}
		if errors.Is(err, migapply.ErrBusy) {
			// Another apply (gpumemctl mig apply, by hand) has the node: not a failure of
			// this one, which looks again at the next gres interval. Said once per holder.
			if msg := err.Error(); msg != m.deferred {
				m.deferred = msg
				m.log.Warn("MIG apply deferred", "err", err)
			}
			return
		}
		m.deferred = ""
		if err != nil {
			wait := migapply.RetryAfter(m.opt.RetryAfter, int(m.failures.Add(1)))
			m.retryAt.Store(time.Now().Add(wait).UnixNano())
			m.log.Error("MIG apply failed", "err", err, "retry_in", wait)
			return
		}
		m.failures.Store(0)
	}()
}

// dryRun logs the steps an apply would take, once per plan: without --mig-apply gpumemd
// changes no GPU.
func (m *migReconciler) dryRun(want map[int]mig.Layout) {
	var steps []string
	if m.applier.Pending() {
		steps = append(steps, "an interrupted apply's journal is at "+m.opt.Journal+": start gpumemd with --mig-apply to finish or roll it back")
	}
	if want != nil {
		changes, err := m.applier.Plan(want)
		if err != nil {
			steps = append(steps, "cannot plan: "+err.Error())
		} else {
			steps = append(steps, m.applier.Steps(changes)...)
		}
	}
	if s := strings.Join(steps, "\n"); s != m.said {
		m.said = s
		m.log.Info("MIG layout differs; without --mig-apply nothing changes. An apply would:\n  " + strings.Join(steps, "\n  "))
	}
}

// desired reads this node's file of the desired directory; nil when it has none.
func (m *migReconciler) desired() (map[int]mig.Layout, error) {
	b, err := atomicfile.Read(filepath.Join(m.opt.Desired, m.node+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return mig.NodeLayouts(b, m.node)
}

// wait lets a running apply finish, up to d, so shutdown does not cut it short where
// avoidable (a cut one is finished from its journal at the next start).
func (m *migReconciler) wait(d time.Duration) {
	for end := time.Now().Add(d); m.running.Load() && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
}

// logWriter turns the applier's step lines into log records.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
