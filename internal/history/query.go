package history

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/history/api"
)

// Job and Sample are the API's types, so the store and its readers cannot drift apart.
type (
	Job    = api.Job
	Sample = api.Sample
)

// ErrNoJob is returned for a job the history does not hold.
var ErrNoJob = errors.New("no such job in this node's history")

const jobCols = `job_id, kind, alloc_bytes, peak_bytes, sum_bytes, samples, gpus, start_unix, end_unix, running, user, account, partition, name`

// Jobs lists jobs seen since sinceUnix, most recent first, at most limit.
func (s *Store) Jobs(sinceUnix int64, limit int) ([]Job, error) {
	rows, err := s.ro.Query(`SELECT `+jobCols+` FROM jobs WHERE end_unix >= ? ORDER BY end_unix DESC, job_id LIMIT ?`, sinceUnix, limit)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer rows.Close()
	out := []Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// Job returns one job and its samples, oldest first.
func (s *Store) Job(id string) (Job, []Sample, error) {
	j, err := scanJob(s.ro.QueryRow(`SELECT `+jobCols+` FROM jobs WHERE job_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, nil, fmt.Errorf("job %s: %w", id, ErrNoJob)
	}
	if err != nil {
		return Job{}, nil, err
	}
	rows, err := s.ro.Query(`SELECT t_unix, used_bytes FROM samples WHERE job_id = ? ORDER BY t_unix`, id)
	if err != nil {
		return Job{}, nil, fmt.Errorf("history: %w", err)
	}
	defer rows.Close()
	samples := []Sample{}
	for rows.Next() {
		var smp Sample
		if err := rows.Scan(&smp.T, &smp.UsedBytes); err != nil {
			return Job{}, nil, fmt.Errorf("history: %w", err)
		}
		samples = append(samples, smp)
	}
	return j, samples, rows.Err()
}

type scanner interface{ Scan(...any) error }

func scanJob(r scanner) (Job, error) {
	var j Job
	var sum float64
	var n int64
	var gpus string
	if err := r.Scan(&j.ID, &j.Kind, &j.AllocBytes, &j.PeakBytes, &sum, &n, &gpus, &j.Start, &j.End, &j.Running, &j.User, &j.Account, &j.Partition, &j.Name); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Job{}, err
		}
		return Job{}, fmt.Errorf("history: %w", err)
	}
	if n > 0 {
		j.MeanBytes = sum / float64(n)
	}
	j.GPUs = []int{}
	for _, f := range strings.Split(gpus, ",") {
		if g, err := strconv.Atoi(f); err == nil {
			j.GPUs = append(j.GPUs, g)
		}
	}
	return j, nil
}
