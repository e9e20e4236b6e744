// Command gpumemd is the gpumem node sidecar: it reads NVML, keeps gres.conf in step
// with the GPUs, serves Prometheus metrics and per-job history, enforces per-job GPU
// memory slices, and drains the node through scontrol when its GPUs fail.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/health"
	"github.com/gpumem/gpumem/internal/metrics"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/usage"
	"github.com/gpumem/gpumem/internal/version"
)

func main() {
	// A log that cannot be written (stderr a pipe whose reader went away: journald
	// restarted, a terminal closed) must not end gpumemd: Go kills a process on EPIPE on
	// fd 1 or 2 unless SIGPIPE is ignored. Ignored, the write fails and gpumemd goes on.
	signal.Ignore(syscall.SIGPIPE)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := newRoot(ctx, log).Execute()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpumemd:", err)
	}
	os.Exit(exitCode(err))
}

// run starts the sidecar and blocks until ctx ends. ready, when not nil, receives the
// address the HTTP server listens on (tests listen on 127.0.0.1:0).
func run(ctx context.Context, args []string, log *slog.Logger, ready chan<- string) error {
	opt, err := parseArgs(args, os.Stderr)
	if err == nil && opt.Version {
		fmt.Println("gpumemd version", version.String())
		return nil
	}
	var w warning
	if errors.As(err, &w) {
		if w.err != nil {
			log.Warn("gpumem.conf shared keys: using defaults where wrong", "err", w.err)
		}
	} else if err != nil {
		return err
	}
	if opt.NoConf {
		log.Info("no gpumem.conf: running on the built-in defaults", "config", opt.ConfPath)
	}
	if err := opt.check(); err != nil {
		return err
	}
	if opt.WebConfigFile != "" {
		// Read as gpumem.conf is first (a FIFO or a device would block web.Validate).
		if _, err := atomicfile.ReadCapped(opt.WebConfigFile, config.MaxFileBytes); err != nil {
			return fmt.Errorf("--web.config.file: %w", err)
		}
		if err := web.Validate(opt.WebConfigFile); err != nil {
			return fmt.Errorf("--web.config.file %s: %w", opt.WebConfigFile, err)
		}
	}
	node := opt.NodeName
	if node == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("no --node and no host name: %w", err)
		}
		node, _, _ = strings.Cut(h, ".")
	}
	src, err := nvmlsrc.Open(opt.NVML)
	if opt.Once {
		if err != nil {
			return err
		}
		defer src.Close()
		sweepFences(opt, node, realFenceEnv(), slurmHolding(opt.Scontrol), log)
		return once(opt, node, src, log)
	}
	if err != nil {
		// A node whose driver is broken must be drained, not left in service by a
		// sidecar that exits and restarts: run without NVML, report the node unhealthy,
		// drain it (with Drain) and retry NVML every poll.
		log.Error("NVML cannot start; the node counts as unhealthy until it does", "err", err)
		src = nil
	}

	d := newDaemon(opt, node, src, log)
	defer d.closeNVML()
	defer d.closeHistory()
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	// Limits a crashed gpumemd's prolog or epilog left behind go first, then what
	// later epilogs leave.
	go sweepFencesEvery(pollCtx, fenceSweepEvery, func() { sweepFences(opt, node, realFenceEnv(), slurmHolding(opt.Scontrol), log) })
	log.Info("gpumemd started", "version", version.String(), "node", node, "nvml", opt.NVML, "listen", opt.Listen,
		"poll", opt.PollInterval, "policy", opt.UsagePolicy, "drain", opt.Drain, "gres", opt.WriteGres)

	if d.notifier != nil {
		notified := d.notifier.Start(pollCtx)
		defer func() { <-notified }()
	}
	pollDone := make(chan struct{})
	go func() { d.run(pollCtx); close(pollDone) }()
	if opt.JobSummary && opt.HistoryDB != "" {
		summariesDone := make(chan struct{})
		go func() { d.writeSummaries(pollCtx); close(summariesDone) }()
		defer func() { <-summariesDone }()
	}
	// The HTTP server is one duty among others: while its port cannot be had (another
	// process holds it) usage, health and gres.conf go on, and it retries.
	served := make(chan struct{})
	go func() { d.serveHTTP(ctx, ready); close(served) }()
	<-ctx.Done()
	<-served
	stopPolling()
	<-pollDone
	log.Info("gpumemd stopped")
	return nil
}

// once is one gres.conf/inventory write for an admin or a provisioning script: it
// fails when slurmd -G rejects the file, and waits for the hook it started.
func once(opt options, node string, src *nvmlsrc.Source, log *slog.Logger) error {
	w := newGresWriter(opt, node, src, log)
	err := nvmlsrc.Guard(w.write)
	w.wait(2 * time.Minute)
	return err
}

// newDaemon sets up every duty. Nothing here stops gpumemd: a history that cannot be
// opened is retried by the polls and shows in the metrics.
func newDaemon(opt options, node string, src *nvmlsrc.Source, log *slog.Logger) *daemon {
	unit := uint64(opt.Shared.ShardUnitMiB) << 20
	d := &daemon{
		opt: opt, node: node, unit: unit, src: src, log: log,
		exporter:   metrics.NewExporter(),
		duties:     newDuties(log),
		xids:       make(chan health.XIDEvent, 64),
		pollErrors: map[string]uint64{}, actions: map[string]uint64{}, lastErr: map[string]string{},
	}
	// Bounded well under a poll: a hung slurmctld leaves the GPU processes no job's
	// (measured, never acted on) instead of stalling measurement and health.
	scontrol := slurmcli.Scontrol(opt.Scontrol)
	scontrol.Timeout = 5 * time.Second
	queue := slurmcli.SqueueBeside(opt.Scontrol)
	queue.Timeout = scontrol.Timeout
	d.owners = &usage.Owners{Node: node, Scontrol: scontrol, Squeue: queue, Log: log}
	d.enforcer = &usage.Enforcer{UsagePolicy: opt.UsagePolicy, Grace: opt.UsageGrace,
		Confirm: func(job string, pids []int) (map[int]bool, error) {
			return d.owners.Confirm(context.Background(), job, pids)
		}}
	if opt.UsageNotify || opt.IdlePolicy != "off" {
		d.notifier = &usage.Notifier{Scontrol: scontrol, Log: log}
	}
	if opt.UsageNotify {
		d.enforcer.Tell = d.notifier.Tell
	}
	if opt.IdlePolicy != "off" {
		scancel := slurmcli.ScancelBeside(opt.Scontrol)
		scancel.Timeout = scontrol.Timeout
		d.idle = &usage.Reclaimer{Node: node, IdlePolicy: opt.IdlePolicy, After: opt.IdleAfter, Grace: opt.IdleGrace,
			UtilBelow: opt.IdleUtilization, Interval: opt.IdleInterval, ExemptQOS: opt.IdleExemptQOS,
			ExemptAccounts: opt.IdleExemptAccounts, Interactive: opt.IdleInteractive, Unit: unit,
			Scontrol: scontrol, Squeue: queue, Scancel: scancel, Tell: d.notifier.Tell, Log: log}
	}
	d.monitor = &health.Monitor{Node: node, Drainer: slurmcli.ScontrolNode{Run: slurmcli.Scontrol(opt.Scontrol)},
		Drain: opt.Drain, Resume: opt.Resume, XIDHold: opt.XIDHold,
		DrainAfter: opt.DrainAfter, ResumeAfter: opt.ResumeAfter, State: opt.HealthState, Log: log}
	if opt.CriticalXIDs != nil {
		d.monitor.Critical = map[int]bool{}
		for _, x := range opt.CriticalXIDs {
			d.monitor.Critical[x] = true
		}
	}
	d.openHistory(time.Now())
	return d
}

func dirOf(path string) string {
	if i := strings.LastIndex(path, "/"); i > 0 {
		return path[:i]
	}
	return "."
}
