package main

import (
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/history"
	"github.com/gpumem/gpumem/internal/usage"
)

// historyNode serves a real history database the way gpumemd does, one running job.
func historyNode(t *testing.T) string {
	t.Helper()
	j := usage.Job{ID: "4242", Kind: usage.KindShard, Alloc: 20 << 30, Used: 18 << 30, GPUs: []usage.JobGPU{{GPU: 3, Used: 18 << 30}}}
	return serveHistory(t, time.Now(), []usage.Job{j})
}

// serveHistory records one poll a minute from t0, each the jobs seen, into a real
// history database and serves it as gpumemd does.
func serveHistory(t *testing.T, t0 time.Time, polls ...[]usage.Job) string {
	t.Helper()
	s, err := history.Open(filepath.Join(t.TempDir(), "h.db"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i, jobs := range polls {
		if err := s.Record(t0.Add(time.Duration(i)*time.Minute), jobs); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestJobsListAndShow(t *testing.T) {
	url := historyNode(t)
	out, err := run(t, "jobs", "--url", url)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "JOBID") || !strings.Contains(out, "4242") || !strings.Contains(out, "20.0G") ||
		!strings.Contains(out, "18.0G") || !strings.Contains(out, "running") {
		t.Fatalf("jobs table:\n%s", out)
	}
	out, err = run(t, "jobs", "--url", url, "4242")
	if err != nil || !strings.Contains(out, "job 4242 on 127.0.0.1") || !strings.Contains(out, "GPUs 3") {
		t.Fatalf("jobs 4242: %v\n%s", err, out)
	}
	out, err = run(t, "jobs", "--url", url, "--json")
	if err != nil || !strings.Contains(out, `"job_id": "4242"`) {
		t.Fatalf("jobs --json: %v\n%s", err, out)
	}
}

func TestJobsErrorsSayWhat(t *testing.T) {
	url := historyNode(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "--url", url, "12ab"}, "want a Slurm job number"},
		{[]string{"jobs", "--url", url, "99"}, "job 99: not in the history of 1 node(s)"},
		{[]string{"jobs", "--url", "gpu01:9402"}, "want http://HOST:PORT"},
		{[]string{"jobs", "--url", url, "--limit", "0"}, "--limit 0: want 1 to 10000"},
		{[]string{"jobs", "--url", url, "--ca-file", "/nonexistent"}, "--ca-file"},
	} {
		if _, err := run(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("gpumemctl %v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// With no gpumemd at the URL, jobs says what to check rather than the dialer's words.
func TestJobsNoGpumemdSaysWhatToDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = run(t, "jobs", "--url", "http://"+addr)
	if err == nil || !strings.Contains(err.Error(), "no gpumemd answers at http://"+addr) ||
		!strings.Contains(err.Error(), "systemctl status gpumemd") {
		t.Fatalf("jobs with no gpumemd: %v", err)
	}
}

// TestSomeNodesDown: jobs, jobs JOBID and advise print what the nodes that answered
// hold, warn naming the node that did not, and exit 1, as inventory pull does.
func TestSomeNodesDown(t *testing.T) {
	up, down := historyAt(t), "http://127.0.0.1:1"
	for _, c := range []struct {
		args []string
		says string // in the output of the node that answered
	}{
		{[]string{"jobs", "--since", "87600h"}, "102"},
		{[]string{"jobs", "102"}, "job 102 on"},
		{[]string{"advise", "--since", "87600h", "--running", "--min-jobs", "1", "--config", "/dev/null", "-o", "csv"}, "ana"},
	} {
		out, err := run(t, append(c.args, "--url", up+","+down)...)
		code, msg := exitCode(err)
		if code != 1 || msg == nil || !strings.Contains(msg.Error(), "1 of 2 nodes did not answer") ||
			!strings.Contains(out, c.says) || !strings.Contains(out, "warning: node 127.0.0.1:1: no gpumemd answers") {
			t.Errorf("gpumemctl %v: status %d (%v), want 1, the answers and a warning naming 127.0.0.1:1:\n%s", c.args, code, msg, out)
		}
	}
	// No node answering is still an error without output.
	if out, err := run(t, "jobs", "--url", down+",http://127.0.0.1:2"); err == nil || !strings.Contains(err.Error(), "none of the 2 nodes answered") {
		t.Errorf("all down: %v\n%s", err, out)
	}
}
