package versioned

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encode is gpumemctl's JSON layout (cmd/gpumemctl writeJSON).
func encode(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

type row struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

type explanation struct {
	Ask    string   `json:"ask"`
	Causes []string `json:"causes"`
}

// whyBefore and adviseBefore are the anonymous structs gpumemctl printed why and
// advise with.
type whyBefore struct {
	Version int    `json:"version"`
	Job     string `json:"job_id"`
	User    string `json:"user"`
	State   string `json:"state"`
	Reason  string `json:"slurm_reason"`
	explanation
	Notes []string `json:"notes,omitempty"`
}

type adviseBefore struct {
	Version    int     `json:"version"`
	By         string  `json:"by"`
	Percentile float64 `json:"percentile"`
	Rows       []row   `json:"groups"`
}

// TestOutputsAsBefore: each document prints the bytes the anonymous struct it replaced
// in gpumemctl printed, its version the Format's.
func TestOutputsAsBefore(t *testing.T) {
	rows := []row{{"a<b>&", 1}, {"c", 2}}
	e := explanation{Ask: "gpu:mem:20g <x>", Causes: []string{"quota"}}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"advise", NewAdvise("user", 95, rows), adviseBefore{Advise.Current, "user", 95, rows}},
		{"advise, nothing", NewAdvise[row]("account", 50, nil), adviseBefore{Advise.Current, "account", 50, []row{}}},
		{"jobs", NewJobs[row](nil), struct {
			Version int   `json:"version"`
			Nodes   []row `json:"nodes"`
		}{Jobs.Current, []row{}}},
		{"job, no node", NewJob[row](nil), struct {
			Version int   `json:"version"`
			Nodes   []row `json:"nodes"`
		}{Job.Current, nil}},
		{"mig status", NewMIGStatus(rows, 1), struct {
			Version int   `json:"version"`
			GPUs    []row `json:"gpus"`
			Differ  int   `json:"not_as_desired"`
		}{MIGStatus.Current, rows, 1}},
		{"report", NewReport(10, 20, rows), struct {
			Version int    `json:"version"`
			Start   int64  `json:"start_unix"`
			End     int64  `json:"end_unix"`
			Unit    string `json:"unit"`
			Rows    []row  `json:"rows"`
		}{Report.Current, 10, 20, "GiB*h", rows}},
		{"steer report", func() SteerReportDoc {
			d := NewSteerReport(3, 2, 40, 8)
			d.GPUs = append(d.GPUs, SteerGPU{"n1", 0, 10, 30})
			return d
		}(), struct {
			Version  int   `json:"version"`
			Running  int   `json:"running_shard_uses"`
			Pending  int   `json:"pending_shard_jobs"`
			Free     int64 `json:"free_shards"`
			Stranded int64 `json:"stranded_shards"`
			GPUs     []struct {
				Node string `json:"node"`
				GPU  int    `json:"gpu"`
				Used int64  `json:"used"`
				Free int64  `json:"free"`
			} `json:"gpus"`
		}{SteerReport.Current, 3, 2, 40, 8, []struct {
			Node string `json:"node"`
			GPU  int    `json:"gpu"`
			Used int64  `json:"used"`
			Free int64  `json:"free"`
		}{{"n1", 0, 10, 30}}}},
		{"used, nothing", NewUsed[row](nil), struct {
			Version int   `json:"version"`
			Jobs    []row `json:"jobs"`
		}{Used.Current, []row{}}},
		{"why", NewWhy("42", "ann", "PENDING", "Resources", e, []string{"a <note>"}), whyBefore{Why.Current, "42", "ann", "PENDING", "Resources", e, []string{"a <note>"}}},
		{"why, no notes", NewWhy("42", "ann", "PENDING", "", e, nil), whyBefore{Why.Current, "42", "ann", "PENDING", "", e, nil}},
	} {
		if got, want := encode(t, c.got), encode(t, c.want); got != want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, want)
		}
	}
}

// TestQuotaAsBefore: quota's document, a named type in gpumemctl before, prints as it did.
func TestQuotaAsBefore(t *testing.T) {
	d := NewQuota("42", "ann", "lab", "normal", "PENDING", "QOSGrpGRES", 80)
	d.Quotas = []QuotaLine{{"account lab", 100, 40, 60, "waits"}}
	want := `{
  "version": 1,
  "job_id": "42",
  "user": "ann",
  "account": "lab",
  "qos": "normal",
  "state": "PENDING",
  "reason": "QOSGrpGRES",
  "need_gib": 80,
  "quotas": [
    {
      "quota": "account lab",
      "size_gib": 100,
      "held_gib": 40,
      "left_gib": 60,
      "verdict": "waits"
    }
  ]
}
`
	if got := encode(t, d); got != want {
		t.Errorf("quota:\n%s\nwant\n%s", got, want)
	}
}

func TestJoinObjectsRefusesWhatIsNoObject(t *testing.T) {
	if _, err := joinObjects([]byte(`{"a":1}`), []byte(`[1]`)); err == nil {
		t.Error("a list joined as an object")
	}
	if b, err := joinObjects([]byte(`{"a":1}`), []byte(` {} `), []byte(`{"b":2}`)); err != nil || string(b) != `{"a":1,"b":2}` {
		t.Errorf("%s, %v", b, err)
	}
}
