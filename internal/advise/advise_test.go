package advise

import (
	"fmt"
	"testing"

	"github.com/gpumem/gpumem/internal/history/api"
)

const gib = 1 << 30

func nj(node, id, user, name string, askedGiB, peakMiB int64, hours int64) NodeJob {
	return NodeJob{Node: node, Job: api.Job{ID: id, Kind: "shard", AllocBytes: askedGiB * gib, PeakBytes: peakMiB << 20, GPUs: []int{0},
		Start: 1000, End: 1000 + hours*3600, User: user, Account: "acct-" + user, Name: name}}
}

// ana asks 40 GiB twenty times; nineteen jobs peak at 6 GiB and one at 30: 6 GiB holds
// 95% of them. bo asks 10 GiB and peaks at 9.5 GiB: 10 GiB is right. A job seen on two
// nodes counts once; MIG and whole-GPU jobs are not sized by gpu:mem and are left out.
func planted() []NodeJob {
	var jobs []NodeJob
	for i := 0; i < 19; i++ {
		jobs = append(jobs, nj("n1", fmt.Sprint(100+i), "ana", "train", 40, 6<<10, 1))
	}
	jobs = append(jobs, nj("n2", "200", "ana", "eval", 40, 30<<10, 1))
	for i := 0; i < 4; i++ {
		jobs = append(jobs, nj("n3", fmt.Sprint(300+i), "bo", "infer", 10, 9728, 2))
	}
	jobs = append(jobs, nj("n1", "400", "bo", "infer", 10, 9728, 2), nj("n2", "400", "bo", "infer", 10, 9728, 2))
	mig := nj("n1", "500", "ana", "train", 40, 1, 100)
	mig.Job.Kind = "mig"
	return append(jobs, mig)
}

func TestAdviseByUser(t *testing.T) {
	rows, err := Advise(planted(), Options{By: "user", Percentile: 95, UnitMiB: 1024, MinJobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%+v", rows)
	}
	ana, bo := rows[0], rows[1]
	if ana.Group != "ana" || ana.Jobs != 20 || ana.AskedBytes != 40*gib || ana.PeakPctBytes != 6*gib || ana.PeakMaxBytes != 30*gib ||
		ana.Advised != "6g" || ana.OverGiBHours != 19*34+10 {
		t.Errorf("ana: %+v; want 20 jobs, asked 40g, p95 peak 6g, advised 6g, 656 GiB-h over", ana)
	}
	// 5 jobs (400 once), 0.5 GiB over each for 2 h per node: 4x1 + 2x1.
	if bo.Group != "bo" || bo.Jobs != 5 || bo.Advised != "10g" || bo.OverGiBHours != 6 {
		t.Errorf("bo: %+v; want 5 jobs, advised 10g, 6 GiB-h over", bo)
	}
}

func TestAdviseByNameAndMinJobs(t *testing.T) {
	rows, err := Advise(planted(), Options{By: "name", Percentile: 95, UnitMiB: 1024, MinJobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Group] = r
	}
	if got["train"].Advised != "6g" || got["eval"].Jobs != 1 || got["eval"].Advised != "" || got["infer"].Advised != "10g" {
		t.Errorf("%+v; want train 6g, eval (1 job) no advice, infer 10g", rows)
	}
	if _, err := Advise(planted(), Options{By: "colour", Percentile: 95, UnitMiB: 1024}); err == nil {
		t.Error("--by colour accepted")
	}
}

func TestPercentileAndSize(t *testing.T) {
	s := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]int64{50: 5, 95: 10, 90: 9, 10: 1, 100: 10} {
		if got := Percentile(s, p); got != want {
			t.Errorf("p%v = %d, want %d", p, got, want)
		}
	}
	if Size(20*gib) != "20g" || Size(1536<<20) != "1536m" {
		t.Errorf("%s %s", Size(20*gib), Size(1536<<20))
	}
}
