package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/history/api"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/usage"
)

const gib = 1 << 30

func open(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "history.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func job(id string, gpu int, used uint64) usage.Job {
	return usage.Job{ID: id, Kind: usage.KindShard, Alloc: 20 * gib, Used: used, GPUs: []usage.JobGPU{{GPU: gpu, Used: used}}}
}

func TestPeakMeanGPUsAndEnd(t *testing.T) {
	s := open(t, Options{Bucket: time.Minute})
	t0 := time.Unix(1_700_000_040, 0) // on a minute boundary
	polls := [][]usage.Job{
		{job("12", 0, 10*gib)},
		{job("12", 1, 30*gib)},
		{job("12", 0, 20*gib)},
		{},
	}
	for i, p := range polls {
		if err := s.Record(t0.Add(time.Duration(i)*20*time.Second), p); err != nil {
			t.Fatal(err)
		}
	}
	j, samples, err := s.Job("12")
	if err != nil {
		t.Fatal(err)
	}
	if j.PeakBytes != 30*gib || j.MeanBytes != 20*gib || j.AllocBytes != 20*gib || j.Running ||
		j.Start != t0.Unix() || j.End != t0.Unix()+40 || len(j.GPUs) != 2 {
		t.Fatalf("job 12 = %+v; want peak 30 GiB, mean 20 GiB, GPUs [0 1], start t0, end t0+40s, ended", j)
	}
	// Polls at 0s, 20s, 40s share one one-minute bucket, which keeps their maximum.
	if len(samples) != 1 || samples[0].UsedBytes != 30*gib {
		t.Fatalf("samples %+v; want one bucket holding 30 GiB", samples)
	}
	if _, _, err := s.Job("99"); err == nil || !strings.Contains(err.Error(), "no such job") {
		t.Fatalf("unknown job: %v", err)
	}
}

func TestRetentionBoundsSamplesAndJobs(t *testing.T) {
	s := open(t, Options{Bucket: time.Minute, KeepSamples: 10 * time.Minute, KeepJobs: time.Hour})
	t0 := time.Unix(1_700_000_000, 0)
	for m := 0; m < 30; m++ {
		if err := s.Record(t0.Add(time.Duration(m)*time.Minute), []usage.Job{job("1", 0, gib)}); err != nil {
			t.Fatal(err)
		}
	}
	_, samples, _ := s.Job("1")
	if len(samples) > 11 {
		t.Fatalf("%d samples kept; retention of 10 minutes at 1-minute buckets allows 11", len(samples))
	}
	s.Record(t0.Add(31*time.Minute), nil)
	s.Record(t0.Add(3*time.Hour), nil)
	if jobs, _ := s.Jobs(0, 10); len(jobs) != 0 {
		t.Fatalf("job ended 2.5h ago with 1h retention still listed: %+v", jobs)
	}
}

func TestHTTPAPI(t *testing.T) {
	s := open(t, Options{})
	now := time.Unix(1_700_000_000, 0)
	s.Record(now, []usage.Job{job("7", 2, 5*gib), job("8", 3, gib)})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	var list struct {
		Version int
		Jobs    []Job
	}
	get(t, srv.URL+"/api/jobs?limit=1", http.StatusOK, &list)
	if len(list.Jobs) != 1 || list.Version != api.Version {
		t.Fatalf("limit=1 gave %d jobs, version %d", len(list.Jobs), list.Version)
	}
	var one struct {
		Version int
		Job     Job
		Samples []Sample
	}
	get(t, srv.URL+"/api/jobs/7", http.StatusOK, &one)
	if one.Job.ID != "7" || !one.Job.Running || one.Job.GPUs[0] != 2 || len(one.Samples) != 1 || one.Version != api.Version {
		t.Fatalf("job 7 = %+v", one)
	}
	var e struct{ Error string }
	get(t, srv.URL+"/api/jobs/9", http.StatusNotFound, &e)
	get(t, srv.URL+"/api/jobs/abc", http.StatusBadRequest, &e)
	get(t, srv.URL+"/api/jobs?limit=0", http.StatusBadRequest, &e)
	if !strings.Contains(e.Error, "limit=\"0\": want a whole number from 1 to 10000") {
		t.Fatalf("bad limit error = %q", e.Error)
	}
}

func get(t *testing.T, url string, code int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != code {
		t.Fatalf("GET %s: %d, want %d", url, resp.StatusCode, code)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func TestClientReadsTheAPI(t *testing.T) {
	s := open(t, Options{})
	s.Record(time.Unix(1_700_000_000, 0), []usage.Job{job("77", 1, 3*gib)})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	c := api.Client{Base: srv.URL + "/"}
	list, err := c.Jobs(context.Background(), 0, 10)
	if err != nil || len(list.Jobs) != 1 || list.Jobs[0].PeakBytes != 3*gib {
		t.Fatalf("Jobs: %+v, %v", list, err)
	}
	d, err := c.Job(context.Background(), "77")
	if err != nil || d.Job.ID != "77" || len(d.Samples) != 1 {
		t.Fatalf("Job: %+v, %v", d, err)
	}
	if _, err := c.Job(context.Background(), "78"); err == nil || !strings.Contains(err.Error(), "job 78: no such job") {
		t.Fatalf("missing job error = %v; want the server's message", err)
	}
}

// TestPrivateFilesAndReadOnlyAPI: the database and its WAL are the root's alone (job
// ids, sizes and times are not every local user's), and the API reads through a
// read-only connection of its own, so a writer holding its transaction (a poll) never
// makes a request wait, nor a request the writer.
func TestPrivateFilesAndReadOnlyAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	os.WriteFile(path, nil, 0o644) // an older, world-readable file is narrowed too
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Record(time.Unix(100, 0), []usage.Job{{ID: "1", Kind: usage.KindShard, Alloc: 1 << 30, Used: 1 << 29}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v; want mode 0600", filepath.Base(p), fi.Mode(), err)
		}
	}
	if _, err := s.ro.Exec(`DELETE FROM jobs`); err == nil {
		t.Error("the API's connection could write")
	}
	tx, err := s.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE jobs SET peak_bytes = peak_bytes + 1`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Jobs(0, 10); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("API read during a write: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("an API read waited for the poll's open transaction")
	}
	tx.Rollback()
}

// TestLabelsAndOlderDatabase: Slurm's user, account, partition and job name are kept
// with each job, and a database written before those columns gains them on open.
func TestLabelsAndOlderDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	old, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`CREATE TABLE jobs (job_id TEXT PRIMARY KEY, kind TEXT NOT NULL, alloc_bytes INTEGER NOT NULL,
		peak_bytes INTEGER NOT NULL, sum_bytes REAL NOT NULL, samples INTEGER NOT NULL, gpus TEXT NOT NULL,
		start_unix INTEGER NOT NULL, end_unix INTEGER NOT NULL, running INTEGER NOT NULL);
		INSERT INTO jobs VALUES ('5', 'shard', 1, 1, 1, 1, '0', 1, 2, 0);
		INSERT INTO jobs VALUES ('7', 'shard', 1, 1, 1, 1, '0', 1, 2, 1)`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j := job("6", 0, 3*gib)
	j.Meta = slurmcli.Meta{User: "ana", Account: "physics", Partition: "gpu", Name: "train"}
	if err := s.Record(time.Unix(100, 0), []usage.Job{j}); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Jobs(0, 10)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("%+v %v", jobs, err)
	}
	// A job that ended before summaries existed gets none; one still running does.
	if err := s.Record(time.Unix(200, 0), nil); err != nil {
		t.Fatal(err)
	}
	if due, err := s.Due(time.Unix(300, 0), 0, 10); err != nil || strings.Join(due, " ") != "7 6" {
		t.Errorf("due after upgrade: %v %v; want jobs 6 and 7, not 5", due, err)
	}
	if got := jobs[0]; got.ID != "6" || got.User != "ana" || got.Account != "physics" || got.Partition != "gpu" || got.Name != "train" {
		t.Errorf("job 6: %+v", got)
	}
	if got := jobs[1]; got.ID != "5" || got.User != "" {
		t.Errorf("job 5 from the older database: %+v", got)
	}
}

func TestOpenReadOnlyReadsAndNeverWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	w.Record(t0, []usage.Job{job("7", 0, 5*gib)})
	w.Record(t0.Add(time.Minute), nil)
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	jobs, err := r.Jobs(0, 10)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "7" || jobs[0].AllocBytes != 20*gib {
		t.Fatalf("read-only jobs = %+v, %v; want job 7 with 20 GiB", jobs, err)
	}
	if err := r.Record(t0.Add(2*time.Minute), nil); err == nil {
		t.Fatal("a read-only store recorded a poll")
	}
	w.Close()
	if _, err := OpenReadOnly(filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Fatal("a missing database opened")
	}
	bad := filepath.Join(t.TempDir(), "bad.db")
	os.WriteFile(bad, []byte("not sqlite"), 0o600)
	if _, err := OpenReadOnly(bad); err == nil || !strings.Contains(err.Error(), "not a gpumemd history") {
		t.Fatalf("a file that is not a history: %v", err)
	}
}
