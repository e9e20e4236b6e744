package history

import (
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/usage"
)

// Record stores one poll's jobs in one transaction: each job's running peak and sum,
// its sample for the current bucket (keeping the bucket's maximum), and marks jobs no
// longer seen as ended. Old rows are pruned once per bucket.
func (s *Store) Record(now time.Time, jobs []usage.Job) error {
	if s.db == nil {
		return fmt.Errorf("history: opened read-only (OpenReadOnly): nothing recorded")
	}
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback()
	t := now.Unix()
	bucket := now.Truncate(s.opts.Bucket).Unix()
	for i := range jobs {
		j := &jobs[i]
		gpus, err := s.mergeGPUs(tx, j)
		if err != nil {
			return err
		}
		m := j.Meta
		if _, err := tx.Exec(`INSERT INTO jobs(job_id, kind, alloc_bytes, peak_bytes, sum_bytes, samples, gpus, start_unix, end_unix, running,
				user, account, partition, name)
			VALUES(?, ?, ?, ?, ?, 1, ?, ?, ?, 1, ?, ?, ?, ?)
			ON CONFLICT(job_id) DO UPDATE SET kind = excluded.kind, alloc_bytes = excluded.alloc_bytes,
				peak_bytes = max(peak_bytes, excluded.peak_bytes), sum_bytes = sum_bytes + excluded.sum_bytes,
				samples = samples + 1, gpus = excluded.gpus, end_unix = excluded.end_unix, running = 1,
				user = excluded.user, account = excluded.account, partition = excluded.partition, name = excluded.name,
				over_seconds = over_seconds + CASE WHEN ? THEN min(max(excluded.end_unix - end_unix, 0), ?) ELSE 0 END,
				summary = 0, summary_tries = 0, summary_after = 0`,
			j.ID, j.Kind, int64(j.Alloc), int64(j.Used), float64(j.Used), gpus, t, t, m.User, m.Account, m.Partition, m.Name,
			j.Over(), maxOverStep); err != nil {
			return fmt.Errorf("history: job %s: %w", j.ID, err)
		}
		for _, g := range j.GPUs {
			if _, err := tx.Exec(`INSERT INTO job_gpus(job_id, gpu, alloc_bytes, peak_bytes, sum_bytes, samples) VALUES(?, ?, ?, ?, ?, 1)
				ON CONFLICT(job_id, gpu) DO UPDATE SET alloc_bytes = excluded.alloc_bytes, peak_bytes = max(peak_bytes, excluded.peak_bytes),
					sum_bytes = sum_bytes + excluded.sum_bytes, samples = samples + 1`,
				j.ID, g.GPU, int64(g.Alloc), int64(g.Used), float64(g.Used)); err != nil {
				return fmt.Errorf("history: job %s GPU %d: %w", j.ID, g.GPU, err)
			}
		}
		if _, err := tx.Exec(`INSERT INTO samples(job_id, t_unix, used_bytes) VALUES(?, ?, ?)
			ON CONFLICT(job_id, t_unix) DO UPDATE SET used_bytes = max(used_bytes, excluded.used_bytes)`,
			j.ID, bucket, int64(j.Used)); err != nil {
			return fmt.Errorf("history: job %s sample: %w", j.ID, err)
		}
	}
	if err := s.endMissing(tx, jobs); err != nil {
		return err
	}
	if now.Sub(s.lastPrune) >= s.opts.Bucket {
		if _, err := tx.Exec(`DELETE FROM samples WHERE t_unix < ?`, now.Add(-s.opts.KeepSamples).Unix()); err != nil {
			return fmt.Errorf("history: prune samples: %w", err)
		}
		if _, err := tx.Exec(`DELETE FROM jobs WHERE running = 0 AND end_unix < ?`, now.Add(-s.opts.KeepJobs).Unix()); err != nil {
			return fmt.Errorf("history: prune jobs: %w", err)
		}
		if _, err := tx.Exec(`DELETE FROM job_gpus WHERE job_id NOT IN (SELECT job_id FROM jobs)`); err != nil {
			return fmt.Errorf("history: prune jobs' GPUs: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if now.Sub(s.lastPrune) >= s.opts.Bucket {
		s.lastPrune = now
	}
	return nil
}

// maxOverStep bounds the seconds one poll adds to a job's time over its slice: a gap
// between polls (gpumemd stopped, a slow poll) is not known to have been over.
const maxOverStep = 60

// endMissing marks as ended every running job the poll did not see.
func (s *Store) endMissing(tx *sql.Tx, jobs []usage.Job) error {
	seen := make([]any, 0, len(jobs))
	for i := range jobs {
		seen = append(seen, jobs[i].ID)
	}
	q := `UPDATE jobs SET running = 0 WHERE running = 1`
	if len(seen) > 0 {
		q += ` AND job_id NOT IN (?` + strings.Repeat(",?", len(seen)-1) + `)`
	}
	if _, err := tx.Exec(q, seen...); err != nil {
		return fmt.Errorf("history: end jobs: %w", err)
	}
	for id := range s.gpus {
		if !slices.Contains(seen, any(id)) {
			delete(s.gpus, id)
		}
	}
	return nil
}

// mergeGPUs returns the job's GPUs so far plus this poll's, as "0,3".
func (s *Store) mergeGPUs(tx *sql.Tx, j *usage.Job) (string, error) {
	prev, ok := s.gpus[j.ID]
	if !ok {
		err := tx.QueryRow(`SELECT gpus FROM jobs WHERE job_id = ?`, j.ID).Scan(&prev)
		if err != nil && err != sql.ErrNoRows {
			return "", fmt.Errorf("history: job %s: %w", j.ID, err)
		}
	}
	set := map[int]bool{}
	for _, f := range strings.Split(prev, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			set[n] = true
		}
	}
	for _, g := range j.GPUs {
		set[g.GPU] = true
	}
	list := make([]int, 0, len(set))
	for n := range set {
		list = append(list, n)
	}
	sort.Ints(list)
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = strconv.Itoa(n)
	}
	merged := strings.Join(parts, ",")
	s.gpus[j.ID] = merged
	return merged, nil
}
