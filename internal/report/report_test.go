package report

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// eq is the test lab's GiB table, as accounting.Equivalents gives it.
var eq = map[string]float64{
	"gres/shard": 1, "gres/gpu:h100": 80, "gres/gpu:l4": 22,
	"gres/gpu:1g.5gb": 5, "gres/gpu:2g.10gb": 10, "gres/gpu:3g.20gb": 20,
}

func fixture(t *testing.T) []Run {
	t.Helper()
	b, err := os.ReadFile("testdata/sacct-2205.txt")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ParseSacct(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func TestParseSacctFixture(t *testing.T) {
	runs := fixture(t)
	// 8 lines: the never-started pending job is left out.
	if len(runs) != 7 {
		t.Fatalf("%d runs, want 7: %+v", len(runs), runs)
	}
	r := runs[1]
	if r.JobID != "12" || r.User != "root" || r.Account != "teama" || r.Partition != "train" ||
		r.TRES["gres/gpu:3g.20gb"] != 1 || r.Start.Unix() != 1796083700 || r.End.Unix() != 1796087300 {
		t.Fatalf("run 2 = %+v", r)
	}
	if runs[3].State != "REQUEUED" || runs[4].State != "CANCELLED" {
		t.Fatalf("states %q, %q: want REQUEUED and CANCELLED (without \"by 0\")", runs[3].State, runs[4].State)
	}
	if !runs[6].End.IsZero() {
		t.Fatalf("a running job's end is %v, want zero", runs[6].End)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarizeByAccountUserPartition(t *testing.T) {
	runs := fixture(t)
	from, to := time.Unix(1796083700, 0), time.Unix(1796083700+4*3600, 0)
	now := time.Unix(1796083700+2*3600, 0)
	rows := Summarize(runs, eq, Group{"account", "user", "partition"}, from, to, now, nil)
	got := map[string]float64{}
	for _, r := range rows {
		got[r.Account+"/"+r.User+"/"+r.Partition] = r.AllocGiBh
		if r.UsedGiBh != nil {
			t.Errorf("%+v: used without a measure", r)
		}
	}
	want := map[string]float64{
		// 20 shards for 1 h; a 3g.20gb instance for 1 h: the same 20 GiB·h.
		"teama/root/gpu":   20,
		"teama/root/train": 20,
		// A quarter of an H100 (20 shards) for 30 min, requeued, again for 30 min; a
		// whole L4 (22 GiB) for 1 h, half of it before the period started.
		"teamb/gpumemlab/train":     20*0.5 + 20*0.5,
		"teamb/gpumemlab/inference": 22 * 0.5,
		// Still running at now: counted up to now (1.5 h of 80 GiB).
		"teamb/alice/train": 80 * 1.5,
	}
	for k, w := range want {
		if !near(got[k], w) {
			t.Errorf("%s: %v GiB·h, want %v (all: %v)", k, got[k], w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

func TestSummarizeByAccountAndUsed(t *testing.T) {
	runs := fixture(t)
	from, to := time.Unix(1796083700, 0), time.Unix(1796083700+4*3600, 0)
	used := func(r Run, s, e time.Time) (float64, bool) {
		if r.Account == "teamb" && r.User == "alice" {
			return 0, false // a node without gpumemd
		}
		return 1 * e.Sub(s).Hours(), true // 1 GiB used throughout
	}
	rows := Summarize(runs, eq, Group{"account"}, from, to, to, used)
	if len(rows) != 2 || rows[0].Account != "teama" || rows[1].Account != "teamb" {
		t.Fatalf("rows %+v, want teama and teamb", rows)
	}
	if rows[0].UsedGiBh == nil || !near(*rows[0].UsedGiBh, 2) || !near(rows[0].AllocGiBh, 40) {
		t.Errorf("teama: %+v, want 40 allocated and 2 used", rows[0])
	}
	if rows[1].UsedGiBh != nil {
		t.Errorf("teamb: used %v although one run was not measured", *rows[1].UsedGiBh)
	}
}

func TestUnvaluedGPUIsCounted(t *testing.T) {
	gib, ok := GiB(map[string]float64{"gres/gpu": 2, "gres/gpu:h100": 1}, eq)
	if ok || gib != 80 {
		t.Fatalf("GiB = %v, %v: one of two GPUs has no known type, want 80 and not ok", gib, ok)
	}
	if gib, ok := GiB(map[string]float64{"gres/gpu": 1, "gres/gpu:3g.20gb": 1, "billing": 20, "cpu": 4}, eq); !ok || gib != 20 {
		t.Fatalf("GiB = %v, %v, want 20 and ok", gib, ok)
	}
}

func TestBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"1|root|a|p|gres/shard=2|1|2":                     "7 fields, want 8",
		"1|root|a|p|gres/shard=2|2026-12-01T00:00:00|2|R": "not epoch seconds",
		"1|root|a|p|gres/shard|1|2|R":                     "want NAME=COUNT",
		"1|root|a|p|gres/shard=x|1|2|R":                   "not a number",
	} {
		if _, err := ParseSacct(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
	if _, err := ParseGroup("account,team"); err == nil {
		t.Error("--by team accepted")
	}
}
