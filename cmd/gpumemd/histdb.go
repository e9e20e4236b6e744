package main

import (
	"fmt"
	"os"
	"time"

	"github.com/gpumem/gpumem/internal/history"
	"github.com/gpumem/gpumem/internal/usage"
)

// openHistory opens --history-db when it is set and not open yet: at start, and at each
// poll after a failure. A damaged file is set aside (history.OpenOrSetAside: renamed,
// never deleted) and a new one started; one that cannot be opened at all (its folder is
// not writable, the disk is full) leaves gpumemd running without history until it can.
func (d *daemon) openHistory(now time.Time) *history.Store {
	path := d.opt.HistoryDB
	if path == "" {
		return nil
	}
	err := os.MkdirAll(dirOf(path), 0o700)
	var h *history.Store
	if err == nil {
		var aside string
		h, aside, err = history.OpenOrSetAside(path, history.Options{Bucket: d.opt.HistoryBucket,
			KeepSamples: d.opt.HistoryKeepSamples, KeepJobs: d.opt.HistoryKeepJobs}, now)
		if aside != "" {
			d.setAside(path, aside)
		}
	}
	if err != nil {
		d.historyFailed(fmt.Errorf("--history-db: %w", err))
		return nil
	}
	d.duties.mark("history", nil)
	d.hist.Store(h)
	return h
}

// record writes the poll's jobs to the history, opening it first if it is not open. A
// write that finds the file damaged sets it aside and starts a new one at once, so
// the next poll records again.
func (d *daemon) record(now time.Time, jobs []usage.Job, acts []usage.Action) {
	h := d.hist.Load()
	if h == nil {
		if h = d.openHistory(now); h == nil {
			return
		}
	}
	err := h.Record(now, jobs)
	if err == nil {
		err = h.Acted(acts) // after Record, which adds a job's row
	}
	if err != nil && history.IsCorrupt(err) {
		d.log.Error("history: the database is damaged; setting it aside", "path", d.opt.HistoryDB, "err", err)
		d.hist.Store(nil)
		h.Close()
		aside, aerr := history.SetAside(d.opt.HistoryDB, now)
		if aerr != nil {
			d.historyFailed(aerr)
			return
		}
		d.setAside(d.opt.HistoryDB, aside)
		d.openHistory(now)
		return
	}
	if err != nil {
		d.historyFailed(err)
		return
	}
	d.duties.mark("history", nil)
}

func (d *daemon) historyFailed(err error) {
	d.duties.mark("history", err)
	d.fail("history", err)
}

func (d *daemon) setAside(path, aside string) {
	d.duties.count("history_set_aside")
	d.log.Error("history: the database was damaged; it is kept as "+aside+" and a new one is started (its jobs' history is in the old file)",
		"path", path, "aside", aside)
}

// closeHistory closes the history once the HTTP server and the polls have stopped.
func (d *daemon) closeHistory() {
	if h := d.hist.Swap(nil); h != nil {
		h.Close()
	}
}
