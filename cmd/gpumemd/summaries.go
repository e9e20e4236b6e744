package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpumem/gpumem/internal/history"
	"github.com/gpumem/gpumem/internal/jobsummary"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmrel"
)

// Summaries: at the end of each job gpumemd watched here, what it used goes into its
// AdminComment in Slurm's accounting (package jobsummary), where its user reads it with
// sacct or gpumemctl used long after the node forgot it. A job is summarized once its
// end has settled in accounting; one Slurm could not take (slurmdbd down) is tried again
// with a growing wait, for a week.
const (
	summaryEvery  = 2 * time.Second // a round reads only the local history unless a job is due
	summarySettle = 2 * time.Second // after the last poll that saw the job; Put waits for accounting's end too
	summaryBatch  = 20              // summaries per round: a backlog never stalls the loop
	summaryGiveUp = 7 * 24 * time.Hour
)

type summarizer struct {
	d    *daemon
	acct slurmcli.Accounting
	// lowercases is known once sacctmgr -V answered: Slurm before 23.02 lowercases
	// every AdminComment sacctmgr writes.
	lowercases, known bool
}

func (d *daemon) writeSummaries(ctx context.Context) {
	acct := slurmcli.AccountingBeside(d.opt.Scontrol)
	acct.Sacct.Timeout, acct.Sacctmgr.Timeout = 10*time.Second, 10*time.Second
	s := &summarizer{d: d, acct: acct}
	t := time.NewTicker(summaryEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.round(ctx, now)
		}
	}
}

func (s *summarizer) round(ctx context.Context, now time.Time) {
	h := s.d.hist.Load()
	if h == nil {
		return
	}
	ids, err := h.Due(now, summarySettle, summaryBatch)
	if err != nil || len(ids) == 0 {
		return
	}
	if !s.known {
		v, err := s.acct.Version(ctx)
		if err != nil {
			s.d.log.Debug("job summaries wait for sacctmgr", "err", err)
			return
		}
		rel, err := slurmrel.ParseVersion(v)
		if err != nil {
			s.d.log.Warn("job summaries: sacctmgr -V is not a release; summaries wait", "answer", v)
			return
		}
		s.lowercases, s.known = !slurmrel.Table().Has(rel, slurmrel.SacctmgrKeepsCase), true
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		s.one(ctx, h, id, now)
	}
}

func (s *summarizer) one(ctx context.Context, h *history.Store, id string, now time.Time) {
	log := s.d.log.With("job", id)
	sum, err := h.Summary(id, s.d.node)
	var tok string
	if err == nil {
		tok, err = jobsummary.Encode(sum)
	}
	if err != nil {
		log.Warn("job summary: nothing to write", "err", err)
		s.mark(h.Dropped(id))
		return
	}
	outcome, err := jobsummary.Put(ctx, s.acct, id, tok, s.lowercases)
	switch outcome {
	case jobsummary.Written:
		log.Info("job summary written into its AdminComment", "summary", tok)
		s.mark(h.Written(id))
	case jobsummary.Never:
		log.Warn("job summary not written", "reason", err)
		s.mark(h.Dropped(id))
	default:
		tries, herr := h.Retry(id, now)
		if herr != nil {
			s.mark(herr)
			return
		}
		if time.Duration(tries)*time.Hour > summaryGiveUp {
			log.Warn("job summary given up after a week of tries", "tries", tries, "err", err)
			s.mark(h.Dropped(id))
			return
		}
		// Said at the 1st, 2nd, 4th, 8th... failed try: an admin sees an outage, not a
		// line a minute for each job.
		level := slog.LevelDebug
		if tries&(tries-1) == 0 {
			level = slog.LevelInfo
		}
		log.Log(ctx, level, "job summary: will try again", "tries", tries, "err", err)
	}
}

// mark logs a history write that failed. It runs beside the poll loop, so it touches
// none of the loop's counters (the next poll's write reports a broken database).
func (s *summarizer) mark(err error) {
	if err != nil {
		s.d.log.Error("job summary: history not updated", "err", err)
	}
}
