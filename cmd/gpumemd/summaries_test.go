package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
	"github.com/gpumem/gpumem/internal/usage"
)

// TestSummariesBesideThePolls: the summary writer runs in a goroutine of its own
// beside the poll loop, over the same history, while Slurm's accounting does not
// answer (this machine's Slurm is never asked): under -race, nothing they share races,
// and the ended job's summary waits for a later try instead of being dropped.
func TestSummariesBesideThePolls(t *testing.T) {
	src, err := nvmlsrc.Open("mock:dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opt := options{Gpumemd: config.DefaultGpumemd(), Shared: config.Default()}
	opt.HistoryDB, opt.HealthState = filepath.Join(t.TempDir(), "history.db"), ""
	opt.Scontrol = slurmtest.New(t, false).Scontrol
	d := newDaemon(opt, "t1", src, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer d.closeHistory()
	h := d.hist.Load()
	if h == nil {
		t.Fatal("no history")
	}
	t0 := time.Now().Add(-time.Minute)
	job := usage.Job{ID: "77", Kind: usage.KindShard, Alloc: 4 << 30, Used: 3 << 30, GPUs: []usage.JobGPU{{GPU: 0, Alloc: 4 << 30, Used: 3 << 30}}}
	if err := h.Record(t0, []usage.Job{job}); err != nil {
		t.Fatal(err)
	}
	if err := h.Record(t0.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	// Accounting that does not answer, as with slurmdbd down.
	dir := t.TempDir()
	for _, c := range []string{"sacct", "sacctmgr"} {
		if err := os.WriteFile(filepath.Join(dir, c), []byte("#!/bin/sh\necho 'sacct: error: Problem talking to the database: Connection refused' >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	acct := slurmcli.Accounting{Sacct: slurmcli.Runner{Path: filepath.Join(dir, "sacct")}, Sacctmgr: slurmcli.Runner{Path: filepath.Join(dir, "sacctmgr")}}
	s := &summarizer{d: d, acct: acct, known: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			s.round(ctx, time.Now())
			s.mark(errors.New("history: a write failed")) // what a failed Written or Retry reports
		}
	}()
	for range 5 {
		d.poll(time.Now())
	}
	<-done
	if due, _ := h.Due(time.Now().Add(time.Hour), 0, 10); len(due) != 1 || due[0] != "77" {
		t.Errorf("job 77 after failed tries: due %v; want it kept for a later try", due)
	}
}
