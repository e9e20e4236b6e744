package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/gpumem/gpumem/internal/health"
	"github.com/gpumem/gpumem/internal/history"
	"github.com/gpumem/gpumem/internal/metrics"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/usage"
)

// daemon is one node's sidecar: each poll reads NVML once and feeds the same snapshot
// to usage enforcement, health, history, gres.conf and the metrics.
type daemon struct {
	ctx      context.Context // the poll loop's, for what starts once NVML does
	opt      options
	node     string
	unit     uint64          // bytes of one shard
	src      *nvmlsrc.Source // nil while NVML cannot start
	log      *slog.Logger
	exporter *metrics.Exporter
	enforcer *usage.Enforcer
	idle     *usage.Reclaimer // nil with IdlePolicy = off
	monitor  *health.Monitor
	hist     atomic.Pointer[history.Store] // nil without history, or while it cannot be opened
	duties   *duties                       // what gpumemd cannot do now, for the metrics
	refusals refusalLog                    // why /api refused, rate-limited
	owners   *usage.Owners                 // which job runs each GPU process, and what it was given
	notifier *usage.Notifier               // nil unless jobs are told of warnings
	xids     chan health.XIDEvent
	gres     *gresWriter    // nil unless gres.conf or the inventory is written
	mig      *migReconciler // nil unless --mig-desired

	polls      uint64
	pollErrors map[string]uint64
	actions    map[string]uint64
	lastErr    map[string]string // per stage, so a failure that lasts is logged once
}

// run polls until ctx ends. The first poll happens at once, so /metrics has data
// before the first interval passes.
func (d *daemon) run(ctx context.Context) {
	d.ctx = ctx
	if d.src != nil {
		d.startNVML()
	}
	t := time.NewTicker(d.opt.PollInterval)
	defer t.Stop()
	for {
		d.pollSurviving(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollSurviving runs one poll; a panic in it (a bug, or a driver answer nothing
// expected) is logged with its stack and counted as a failed poll, and the next poll
// runs as usual: one bad poll must not end enforcement and health on the node.
func (d *daemon) pollSurviving(now time.Time) {
	defer func() {
		if r := recover(); r != nil {
			d.fail("panic", fmt.Errorf("poll panicked: %v\n%s", r, debug.Stack()))
		}
	}()
	d.poll(now)
}

func (d *daemon) poll(now time.Time) {
	start := time.Now()
	d.polls++
	d.takeXIDs()
	var snap usage.Snapshot
	sampleErr := d.openNVML()
	if sampleErr == nil {
		sampleErr = nvmlsrc.Guard(func() error {
			var err error
			snap, err = usage.Sample(d.src.NVML, now)
			return err
		})
	}
	if sampleErr != nil {
		d.fail("nvml", sampleErr)
	}
	d.duties.mark("nvml", sampleErr)
	var jobs []usage.Job
	var idle []usage.IdleJob
	var unattributed map[int]uint64
	var acts []usage.Action
	if sampleErr == nil {
		owner, ownersPoll := d.owners.Owners(context.Background(), snap, now)
		acc := usage.Measure(snap, owner, d.unit)
		d.owners.Report(acc) // orphans, sizes NVML did not give, memory on GPUs not given
		jobs, unattributed = acc.Jobs, acc.NoJob()
		acts = d.enforcer.Step(jobs, now)
		for _, a := range acts {
			d.actions[a.Kind]++
			d.log.Warn(a.Detail, "job", a.Job, "action", a.Kind)
		}
		if d.idle != nil {
			idle = d.idle.Step(context.Background(), snap, jobs, unattributed, ownersPoll.Err != nil, now)
		}
	}
	status, err := d.monitor.Observe(snap, sampleErr, now)
	if err != nil {
		d.fail("health", err)
	}
	if d.mig != nil && status.Healthy {
		d.mig.maybeStart(now)
	}
	if d.gres != nil && status.Healthy && (d.mig == nil || !d.mig.busy()) {
		// A sick node keeps its last good gres.conf: rewriting it without a lost GPU
		// would hide the problem from Slurm instead of draining. While a MIG apply runs
		// the layout is changing: the apply regenerates gres.conf itself once verified.
		if err := d.gres.maybeWrite(now); err != nil {
			d.fail("gres", err)
		}
	}
	if d.opt.HistoryDB != "" && sampleErr == nil {
		d.record(now, jobs, acts)
	}
	dutyUp, dutyFailures, counts := d.duties.snapshot()
	var fences map[int]string
	var backend string
	if d.gres != nil {
		fences, backend = d.gres.Fences(), d.gres.FenceBackend()
	}
	d.exporter.Set(&metrics.State{
		Node:             d.node,
		Polled:           true,
		SampleErr:        sampleErr,
		Snapshot:         snap,
		Jobs:             jobs,
		Idle:             idle,
		IdleActions:      d.idleActions(),
		Unattributed:     unattributed,
		Health:           status,
		XIDs:             maps.Clone(d.monitor.XIDCounts),
		Actions:          maps.Clone(d.actions),
		Polls:            d.polls,
		PollErrors:       maps.Clone(d.pollErrors),
		PollDuration:     time.Since(start),
		UnknownAllocJobs: d.owners.Unreadable,
		AllocQueryErrors: d.owners.Failures,
		Orphans:          d.owners.Orphans,
		UnknownSizes:     d.owners.UnknownSizes,
		Strays:           d.owners.Strays,
		Unit:             d.unit,
		FragSizes:        fragSizes(d.opt.FragmentationSizesMiB),
		DutyUp:           dutyUp,
		DutyFailures:     dutyFailures,
		HistorySetAside:  counts["history_set_aside"],
		WarningsDropped:  d.warningsDropped(),
		Fences:           fences,
		FenceBackend:     backend,
	})
}

// openNVML opens NVML when it could not be opened before; the error is the poll's.
func (d *daemon) openNVML() error {
	if d.src != nil {
		return nil
	}
	src, err := nvmlsrc.Open(d.opt.NVML)
	if err != nil {
		return fmt.Errorf("NVML cannot start: %w", err)
	}
	d.log.Info("NVML started", "nvml", src.Spec)
	d.src = src
	d.startNVML()
	return nil
}

// startNVML starts what needs NVML besides the poll: the XID watcher and the gres.conf
// writer.
func (d *daemon) startNVML() {
	if err := health.WatchXIDs(d.ctx, d.src.NVML, time.Second, d.xids); err != nil {
		d.log.Warn("XID events unavailable; health relies on polling", "err", err)
	}
	if d.opt.WriteGres || d.opt.WriteInventory {
		d.gres = newGresWriter(d.opt, d.node, d.src, d.log)
	}
	if d.opt.MIG.Desired != "" {
		d.mig = newMIG(d.opt, d.node, d)
	}
}

// closeNVML waits for the gres.conf hook and closes NVML, once polling has stopped.
func (d *daemon) closeNVML() {
	if d.mig != nil {
		d.mig.wait(30 * time.Second)
	}
	if d.gres != nil {
		d.gres.wait(30 * time.Second)
	}
	if d.src != nil {
		d.src.Close()
	}
}

// takeXIDs hands the events the watcher queued since the last poll to health.
func (d *daemon) takeXIDs() {
	for {
		select {
		case ev := <-d.xids:
			d.log.Warn("XID event", "gpu", ev.GPU, "xid", ev.XID)
			d.monitor.XID(ev.GPU, ev.XID, ev.At)
		default:
			return
		}
	}
}

func (d *daemon) fail(stage string, err error) {
	d.pollErrors[stage]++
	if msg := err.Error(); d.lastErr[stage] != msg {
		d.lastErr[stage] = msg
		d.log.Error("poll", "stage", stage, "err", err)
	}
}

func fragSizes(mib []int64) []uint64 {
	out := make([]uint64, 0, len(mib))
	for _, m := range mib {
		out = append(out, uint64(m)<<20)
	}
	return out
}

func (d *daemon) warningsDropped() uint64 {
	if d.notifier == nil {
		return 0
	}
	return d.notifier.Dropped.Load()
}

func (d *daemon) idleActions() map[string]uint64 {
	if d.idle == nil {
		return nil
	}
	return maps.Clone(d.idle.Actions)
}
