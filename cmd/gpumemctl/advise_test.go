package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gpumem/gpumem/internal/advise"
	"github.com/gpumem/gpumem/internal/history/api"
)

// TestAdviseAcrossNodes: two nodes' gpumemd serve their history; advise reads both,
// counts job 7 (on both nodes) once, leaves the running job out, and advises the size
// that holds the jobs' peaks.
func TestAdviseAcrossNodes(t *testing.T) {
	serve := func(jobs ...api.Job) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(api.JobList{Jobs: jobs})
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	j := func(id string, asked, peakMiB int64, running bool) api.Job {
		return api.Job{ID: id, Kind: "shard", AllocBytes: asked << 30, PeakBytes: peakMiB << 20, GPUs: []int{0},
			Start: 0, End: 3600, Running: running, User: "ana", Account: "physics", Name: "train"}
	}
	a := serve(j("5", 20, 3000, false), j("6", 20, 3500, false), j("7", 20, 4000, false))
	b := serve(j("7", 20, 4000, false), j("8", 20, 70000, true))
	var out bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetArgs([]string{"advise", "--url", a + "," + b, "--by", "account", "-o", "json"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		By   string       `json:"by"`
		Rows []advise.Row `json:"groups"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got.By != "account" || len(got.Rows) != 1 {
		t.Fatalf("%s", out.String())
	}
	r := got.Rows[0]
	// Peaks 3000, 3500, 4000 MiB: p95 is 4000 MiB, held by 4 GiB.
	over := float64(3*(20<<10)-3000-3500-4000+(20<<10)-4000) / 1024
	if r.Group != "physics" || r.Jobs != 3 || r.Advised != "4g" || fmt.Sprintf("%.2f", r.OverGiBHours) != fmt.Sprintf("%.2f", over) {
		t.Errorf("%+v; want physics, 3 jobs, advised 4g, %.2f GiB-h over-asked", r, over)
	}
}
