// Package api is the wire format of gpumemd's history API (/api/jobs) and a client for
// it, kept apart from the SQLite store so gpumemctl can read a node's history without
// linking SQLite.
package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/versioned"
)

// Job is one job's history on one node.
type Job struct {
	ID         string  `json:"job_id"`
	Kind       string  `json:"kind"` // a slicekind: shard, mig, gpu or unknown
	AllocBytes int64   `json:"alloc_bytes"`
	PeakBytes  int64   `json:"peak_bytes"`
	MeanBytes  float64 `json:"mean_bytes"`
	GPUs       []int   `json:"gpus"`
	Start      int64   `json:"start_unix"`
	End        int64   `json:"end_unix"` // last poll that saw the job
	Running    bool    `json:"running"`
	// From Slurm's record of the job; empty where it could not be read (and in
	// history written before these fields). Name is the user's free text.
	User      string `json:"user,omitempty"`
	Account   string `json:"account,omitempty"`
	Partition string `json:"partition,omitempty"`
	Name      string `json:"name,omitempty"`
}

// Sample is a job's highest use within one bucket.
type Sample struct {
	T         int64 `json:"t_unix"`
	UsedBytes int64 `json:"used_bytes"`
}

// Version is the version of both answers (internal/versioned); the server sets it and
// the client checks it, an answer without one being version 1.
var Version = versioned.HistoryAPI.Current

// JobList is the answer of GET /api/jobs.
type JobList struct {
	Version int   `json:"version"`
	Jobs    []Job `json:"jobs"`
}

// JobDetail is the answer of GET /api/jobs/{id}.
type JobDetail struct {
	Version int      `json:"version"`
	Job     Job      `json:"job"`
	Samples []Sample `json:"samples"`
}

// Error is the body of every non-200 answer.
type Error struct {
	Error string `json:"error"`
}

// Client reads one gpumemd's history.
type Client struct {
	Base     string // e.g. https://gpu01:9402
	HTTP     *http.Client
	User     string // basic auth, as the node's web config demands
	Password string
}

// Jobs lists jobs seen since sinceUnix, most recent first.
func (c Client) Jobs(ctx context.Context, sinceUnix int64, limit int) (JobList, error) {
	q := url.Values{"since": {strconv.FormatInt(sinceUnix, 10)}, "limit": {strconv.Itoa(limit)}}
	var out JobList
	return out, c.get(ctx, "/api/jobs?"+q.Encode(), &out)
}

// Job returns one job with its samples.
func (c Client) Job(ctx context.Context, id string) (JobDetail, error) {
	var out JobDetail
	return out, c.get(ctx, "/api/jobs/"+url.PathEscape(id), &out)
}

func (c Client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.Base, "/")+path, nil)
	if err != nil {
		return err
	}
	if c.User != "" {
		req.SetBasicAuth(c.User, c.Password)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e Error
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s: %s", c.Base, e.Error)
		}
		return fmt.Errorf("%s%s: HTTP %s", c.Base, path, resp.Status)
	}
	// The version first, so that a newer gpumemd's answer is refused as that rather than
	// for a field it added; then every field, none unknown.
	var head struct {
		Version int `json:"version"`
	}
	if json.Unmarshal(body, &head) == nil {
		if err := versioned.HistoryAPI.Check(head.Version); err != nil {
			return fmt.Errorf("%s%s: %w", c.Base, path, err)
		}
	}
	if err := versioned.Strict(body, v); err != nil {
		return fmt.Errorf("%s%s: not a gpumemd answer: %w", c.Base, path, err)
	}
	return nil
}
