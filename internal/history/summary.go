package history

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/gpumem/gpumem/internal/jobsummary"
	"github.com/gpumem/gpumem/internal/usage"
)

// A job's end-of-job summary (package jobsummary) is written by gpumemd into Slurm after
// the job ends here; the jobs table keeps where that stands, so a summary Slurm could
// not take (slurmdbd down) is written later, and one written is not written again.
const (
	summaryDue     = 0 // the job runs, or ended and its summary is not written yet
	summaryWritten = 1
	summaryOld     = 2 // ended before this release wrote summaries
	summaryDropped = 3 // given up (too old, or nothing to write): logged by the writer
)

// Acted counts the enforcer's warnings and kills on each job, for its summary.
func (s *Store) Acted(acts []usage.Action) error {
	if s.db == nil {
		return fmt.Errorf("history: opened read-only (OpenReadOnly): nothing recorded")
	}
	for _, a := range acts {
		col := map[string]string{"warn": "warnings", "kill": "kills"}[a.Kind]
		if col == "" {
			continue
		}
		if _, err := s.db.Exec(`UPDATE jobs SET `+col+` = `+col+` + 1 WHERE job_id = ?`, a.Job); err != nil {
			return fmt.Errorf("history: job %s: %w", a.Job, err)
		}
	}
	return nil
}

// Due lists the jobs whose summary is to be written now: ended here at least settle
// ago (so Slurm's accounting has the job's end before gpumem writes into it), not
// written yet, and past the time a failed try set for the next; oldest first, at most
// limit.
func (s *Store) Due(now time.Time, settle time.Duration, limit int) ([]string, error) {
	rows, err := s.ro.Query(`SELECT job_id FROM jobs WHERE running = 0 AND summary = ? AND end_unix <= ? AND summary_after <= ?
		ORDER BY end_unix, job_id LIMIT ?`, summaryDue, now.Add(-settle).Unix(), now.Unix(), limit)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Summary composes job id's summary on this node (named node) from what the history
// holds: per GPU its slice, peak and mean; the time over its slice; warnings and kills;
// and its memory over time, downsampled.
func (s *Store) Summary(id, node string) (jobsummary.Summary, error) {
	sum := jobsummary.Summary{Version: 1, Node: node}
	err := s.ro.QueryRow(`SELECT kind, max(end_unix - start_unix, 0), over_seconds, warnings, kills FROM jobs WHERE job_id = ?`, id).
		Scan(&sum.Kind, &sum.Seconds, &sum.OverSeconds, &sum.Warnings, &sum.Kills)
	if err == sql.ErrNoRows {
		return sum, fmt.Errorf("job %s: %w", id, ErrNoJob)
	}
	if err != nil {
		return sum, fmt.Errorf("history: %w", err)
	}
	rows, err := s.ro.Query(`SELECT gpu, alloc_bytes, peak_bytes, sum_bytes / max(samples, 1) FROM job_gpus WHERE job_id = ? ORDER BY gpu`, id)
	if err != nil {
		return sum, fmt.Errorf("history: %w", err)
	}
	for rows.Next() {
		var g jobsummary.GPU
		var alloc, peak int64
		var mean float64
		if err := rows.Scan(&g.Index, &alloc, &peak, &mean); err != nil {
			rows.Close()
			return sum, fmt.Errorf("history: %w", err)
		}
		g.SliceMiB, g.PeakMiB, g.MeanMiB = alloc>>20, (peak+(1<<20)-1)>>20, int64(mean)>>20
		sum.GPUs = append(sum.GPUs, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sum, fmt.Errorf("history: %w", err)
	}
	_, samples, err := s.Job(id)
	if err != nil {
		return sum, err
	}
	for _, smp := range samples {
		sum.Series = append(sum.Series, (smp.UsedBytes+(1<<20)-1)>>20)
	}
	sum.Series = jobsummary.Downsample(sum.Series, jobsummary.MaxSeries)
	return sum, nil
}

// Written records that job id's summary is in Slurm.
func (s *Store) Written(id string) error { return s.setSummary(id, summaryWritten, 0) }

// Dropped records that job id's summary will not be written (logged by the caller).
func (s *Store) Dropped(id string) error { return s.setSummary(id, summaryDropped, 0) }

// Retry records a failed try at job id's summary and when to try again: 30 s after the
// first failure, doubling to an hour. tries is how many have failed, this one included.
func (s *Store) Retry(id string, now time.Time) (tries int, err error) {
	if s.db == nil {
		return 0, fmt.Errorf("history: opened read-only (OpenReadOnly): nothing recorded")
	}
	if err := s.db.QueryRow(`SELECT summary_tries FROM jobs WHERE job_id = ?`, id).Scan(&tries); err != nil {
		return 0, fmt.Errorf("history: job %s: %w", id, err)
	}
	tries++
	wait := min(30*time.Second<<min(tries-1, 10), time.Hour)
	_, err = s.db.Exec(`UPDATE jobs SET summary_tries = ?, summary_after = ? WHERE job_id = ?`, tries, now.Add(wait).Unix(), id)
	if err != nil {
		return tries, fmt.Errorf("history: job %s: %w", id, err)
	}
	return tries, nil
}

func (s *Store) setSummary(id string, state, after int) error {
	if s.db == nil {
		return fmt.Errorf("history: opened read-only (OpenReadOnly): nothing recorded")
	}
	if _, err := s.db.Exec(`UPDATE jobs SET summary = ?, summary_after = ? WHERE job_id = ?`, state, after, id); err != nil {
		return fmt.Errorf("history: job %s: %w", id, err)
	}
	return nil
}
