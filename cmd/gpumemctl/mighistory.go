package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/history"
	"github.com/gpumem/gpumem/internal/history/api"
	"github.com/gpumem/gpumem/internal/mig"
)

// historyLimit bounds the jobs read from one node; the API allows no more.
const historyLimit = 10000

// historyDemand reads the jobs each --from-history source recorded within the window
// and turns them into demand (mig.HistoryDemand).
func (f migPlanFlags) historyDemand(ctx context.Context, now time.Time) ([]mig.Demand, error) {
	if f.historyWindow <= 0 {
		return nil, usageError(fmt.Errorf("--history-window %s: want a positive duration such as 168h", f.historyWindow))
	}
	if f.historyWeight < 0 || f.historyWeight != f.historyWeight {
		return nil, usageError(fmt.Errorf("--history-weight %v: want a number of 0 or more", f.historyWeight))
	}
	opt := mig.HistoryOptions{Weight: f.historyWeight}
	switch f.historySize {
	case "alloc":
	case "peak":
		opt.Peak = true
	default:
		return nil, usageError(fmt.Errorf("--history-size %q: want alloc or peak", f.historySize))
	}
	since := now.Add(-f.historyWindow).Unix()
	var past []mig.HistoryJob
	for _, src := range f.fromHistory {
		jobs, err := readHistory(ctx, src, since)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			past = append(past, mig.HistoryJob{Kind: j.Kind, AllocMiB: j.AllocBytes >> 20, PeakMiB: j.PeakBytes >> 20, GPUs: len(j.GPUs)})
		}
	}
	return mig.HistoryDemand(past, opt), nil
}

// readHistory lists the jobs one source saw since sinceUnix: a gpumemd's API for a
// URL, else its SQLite database, opened read-only.
func readHistory(ctx context.Context, src string, sinceUnix int64) ([]api.Job, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		l, err := api.Client{Base: src}.Jobs(ctx, sinceUnix, historyLimit)
		if err != nil {
			return nil, fmt.Errorf("--from-history: %w", unreachable(src, err))
		}
		return l.Jobs, nil
	}
	s, err := history.OpenReadOnly(src)
	if err != nil {
		return nil, fmt.Errorf("--from-history %s: %w", src, err)
	}
	defer s.Close()
	jobs, err := s.Jobs(sinceUnix, historyLimit)
	if err != nil {
		return nil, fmt.Errorf("--from-history %s: %w", src, err)
	}
	return jobs, nil
}
