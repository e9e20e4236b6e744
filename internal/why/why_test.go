package why

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// cluster: n1 two H100s of 80 shards, n2 an A100 in MIG (a 3g.40gb and two 1g.10gb),
// n3 four L4s of 22 shards; shards of 1 GiB.
func cluster() []Node {
	return []Node{
		{Name: "n1", Usable: true, State: "MIXED", Partitions: []string{"gpu", "train"}, GPUs: []GPU{
			{Index: 0, Model: "h100", Shards: 80, Used: 70}, {Index: 1, Model: "h100", Shards: 80, Used: 60}}},
		{Name: "n2", Usable: true, State: "MIXED", Partitions: []string{"gpu", "train"}, GPUs: []GPU{
			{Index: 0, Model: "a100", MIG: []Instance{{"3g.40gb", true}, {"1g.10gb", false}, {"1g.10gb", true}}}}},
		{Name: "n3", Usable: true, State: "MIXED", Partitions: []string{"gpu", "inference"}, GPUs: []GPU{
			{Index: 0, Model: "l4", Shards: 22, Used: 12}, {Index: 1, Model: "l4", Shards: 22, Used: 12},
			{Index: 2, Model: "l4", Shards: 22, Used: 12}, {Index: 3, Model: "l4", Shards: 22, Used: 12}}},
	}
}

func shardJob(part string, gib int64) Job {
	return Job{ID: "7", User: "ana", State: "PENDING", Reason: "Resources", Partitions: []string{part}, Kind: Shard,
		PerGPUMiB: gib << 10, GPUs: 1, Nodes: 1, Priority: 100}
}

func explain(j Job, nodes []Node, mod func(*Input)) (Explanation, string) {
	in := Input{Job: j, Nodes: nodes, UnitMiB: 1024, Now: now}
	if mod != nil {
		mod(&in)
	}
	e := Explain(in)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n", e.Ask, e.Where)
	for _, c := range e.Causes {
		fmt.Fprintf(&b, "%s: %s\n", c.What, c.Text)
	}
	for _, l := range e.Map {
		fmt.Fprintln(&b, l)
	}
	return e, b.String()
}

func TestExplainEachCause(t *testing.T) {
	for _, c := range []struct {
		name string
		job  Job
		mod  func(*Input)
		want []string
		not  []string
	}{
		{name: "fragmented", job: shardJob("inference", 12),
			want: []string{"12 GiB of GPU memory on one GPU, as a slice of a shared GPU (12 shards of 1 GiB)",
				"1 node(s) of partition inference could hold it: n3",
				"memory: fragmented: 40 GiB is free on the GPUs it may use, but no single GPU has the 12 GiB it asks (the most free on one GPU: 10 GiB, on n3 GPU 0)",
				"fit: the largest request that would start now: --gres=gpu:mem:10g (on n3 GPU 0)",
				"n3       GPU 0  l4     [###########.........] 10 GiB free of 22 GiB"}},
		{name: "full", job: shardJob("train", 30),
			mod:  func(in *Input) { in.Nodes[0].GPUs[1].Used = 78 },
			want: []string{"memory: the GPUs it may use are full: 12 GiB free in all, it asks 30 GiB on one GPU"}},
		{name: "fits now", job: shardJob("train", 10),
			want: []string{"memory: GPU memory for it is free now (n1 GPU 0)", "--gres=gpu:mem:20g (on n1 GPU 1)"}},
		{name: "drained node", job: shardJob("train", 30),
			mod: func(in *Input) { in.Nodes[0].Usable, in.Nodes[0].State = false, "IDLE+DRAIN" },
			want: []string{"nodes: not taking jobs now: n1 (idle+drain)", "[node idle+drain]",
				"fit: no gpu:mem request of 1 GiB or more would start now"}},
		{name: "MIG in use", job: Job{ID: "8", State: "PENDING", Reason: "Resources", Partitions: []string{"train"}, Kind: MIG, Type: "3g.40gb", GPUs: 1, Nodes: 1},
			want: []string{"1 MIG instance(s) of profile 3g.40gb", "could hold it: n2",
				"mig: every 3g.40gb MIG instance of its partition is in use (1 of 1)", "n2       GPU 0  a100   MIG: 3g.40gb(used) 1g.10gb 1g.10gb(used)"}},
		{name: "MIG profile nowhere", job: Job{ID: "8", State: "PENDING", Reason: "Resources", Partitions: []string{"train"}, Kind: MIG, Type: "7g.80gb", GPUs: 1, Nodes: 1},
			want: []string{"no node of partition train can ever hold it as the GPUs are now", "memory: no GPU it may use could ever hold it"}},
		{name: "MIG planned", job: Job{ID: "8", State: "PENDING", Reason: "Resources", Partitions: []string{"train"}, Kind: MIG, Type: "7g.80gb", GPUs: 1, Nodes: 1},
			mod: func(in *Input) { in.Planned = map[string]map[string]int{"n2": {"7g.80gb": 1}, "n3": {"7g.80gb": 4}} },
			want: []string{"no node of partition train has a 7g.80gb instance now; its planned MIG layout gives some",
				"mig: no GPU it may use has a 7g.80gb MIG instance in the MIG layout of now",
				"mig: more 7g.80gb instances are planned: n2: 1 (has 0) (the desired MIG layout"},
			not: []string{"could ever hold it", "n3: 4"}},
		{name: "whole GPUs taken", job: Job{ID: "9", State: "PENDING", Reason: "Resources", Partitions: []string{"inference"}, Kind: Whole, Type: "l4", GPUs: 2, Nodes: 1},
			want: []string{"2 whole l4 GPU(s)", "memory: all 4 GPUs it may use are taken, as whole GPUs or by slices of shared ones (4 of 4 busy)"}},
		{name: "quota", job: func() Job { j := shardJob("inference", 4); j.Reason = "AssocGrpBilling"; return j }(),
			mod: func(in *Input) {
				in.Quota = &Quota{Name: "account physics", LimitGiB: 100, HeldGiB: 98, NeedGiB: 4}
			},
			want: []string{"quota: the GPU-memory quota of account physics is 100 GiB; running jobs under it hold 98 GiB and this job needs 4 GiB, so it starts when they free 2 GiB"}},
		{name: "QOS without figures", job: func() Job { j := shardJob("inference", 4); j.Reason = "QOSMaxGRESPerUser"; return j }(),
			want: []string{"quota: a limit of its account or QOS holds it (Slurm's reason QOSMaxGRESPerUser; gpumemctl quota 7 says how much is held)"}},
		{name: "priority", job: func() Job { j := shardJob("inference", 4); j.Reason = "Priority"; return j }(),
			mod: func(in *Input) {
				in.Ahead = []Ahead{{"3", 200, 8 << 10}, {"4", 150, 2 << 10}, {"5", 50, 40 << 10}, {"6", 100, 1 << 10}, {"9", 100, 64 << 10}}
			},
			want: []string{"priority: 3 job(s) ahead of it in its partitions (higher priority, or the same and submitted first) wait too, asking for 11 GiB of GPU memory in all"}},
		{name: "priority hidden", job: func() Job { j := shardJob("inference", 4); j.Reason = "Priority"; return j }(),
			want: []string{"priority: jobs of higher priority wait for the same GPUs (other users' jobs are not shown to you)"}},
		{name: "reservation", job: func() Job {
			j := shardJob("inference", 4)
			j.Reason, j.Reservation = "Reservation", "maint"
			return j
		}(),
			want: []string{"reservation: its reservation maint is not active yet, or its nodes are busy"}},
		{name: "maintenance", job: func() Job {
			j := shardJob("inference", 4)
			j.Reason = "ReqNodeNotAvail, Reserved for maintenance"
			return j
		}(),
			want: []string{"reservation: the nodes it could use are reserved for maintenance now"}},
		{name: "held", job: func() Job { j := shardJob("inference", 4); j.Reason = "JobHeldUser"; return j }(),
			want: []string{"hold: you hold it (scontrol release JOBID lets it start)"}},
		{name: "partition", job: func() Job { j := shardJob("inference", 4); j.Reason = "PartitionTimeLimit"; return j }(),
			want: []string{"partition: its time limit is longer than partition inference allows"}},
		{name: "expected start", job: func() Job { j := shardJob("inference", 12); j.Start = now.Add(90 * time.Minute); return j }(),
			want: []string{"start: Slurm expects to start it at 2026-12-06 13:30 (in 1h30m)"}},
		{name: "not pending", job: func() Job { j := shardJob("inference", 4); j.State = "RUNNING"; return j }(),
			want: []string{"state: job 7 is RUNNING, not waiting"}, not: []string{"memory:"}},
		{name: "-w and -x", job: func() Job {
			j := shardJob("gpu", 12)
			j.ReqNodes, j.ExcNodes = []string{"n1", "n3"}, []string{"n1"}
			return j
		}(),
			want: []string{"could hold it: n3"}, not: []string{"n1 GPU"}},
		{name: "22.05: use per node only", job: shardJob("inference", 12),
			mod: func(in *Input) {
				for i := range in.Nodes[2].GPUs {
					in.Nodes[2].GPUs[i].Used = -1
				}
				in.Nodes[2].HiddenShards = 80
			},
			want: []string{"the GPUs it may use are full: 8 GiB free in all", "8 GiB free of 22 GiB (at most: Slurm does not say per GPU)"}},
		{name: "22.05: may fit", job: shardJob("inference", 12),
			mod: func(in *Input) {
				for i := range in.Nodes[2].GPUs {
					in.Nodes[2].GPUs[i].Used = -1
				}
				in.Nodes[2].HiddenShards = 48
			},
			want: []string{"memory: it may fit on n3 GPU 0, or the GPU memory there may be taken",
				"at most --gres=gpu:mem:22g (on n3 GPU 0; this Slurm does not say how much of it is held)"},
			not: []string{"is free now"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got := explain(c.job, cluster(), c.mod)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, w := range c.not {
				if strings.Contains(got, w) {
					t.Errorf("has %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestMapIsBounded(t *testing.T) {
	var nodes []Node
	for i := range 100 {
		nodes = append(nodes, Node{Name: fmt.Sprintf("g%d", i), Usable: true, Partitions: []string{"gpu"},
			GPUs: []GPU{{Index: 0, Model: "h100", Shards: 80, Used: 80}}})
	}
	e, _ := explain(shardJob("gpu", 10), nodes, nil)
	if len(e.Map) != MaxMapLines+1 || !strings.Contains(e.Map[MaxMapLines], "and 76 more GPUs") {
		t.Errorf("map of %d lines, last %q", len(e.Map), e.Map[len(e.Map)-1])
	}
}

func TestFromSlurm(t *testing.T) {
	for _, c := range []struct {
		tres         string
		kind, typ    string
		perGPU, gpus int64
	}{
		{"gres:shard:20", Shard, "", 20 << 10, 1},
		{"gres/shard:12", Shard, "", 12 << 10, 1},
		{"gres/gpu:3g.40gb:1", MIG, "3g.40gb", 0, 1},
		{"gres:gpu:l4:2", Whole, "l4", 0, 2},
		{"gres/gpu:2", Whole, "", 0, 2},
		{"N/A", "", "", 0, 0},
	} {
		kind, per, gpus, typ := AskOf(c.tres, 1024)
		if kind != c.kind || per != c.perGPU || gpus != c.gpus || typ != c.typ {
			t.Errorf("AskOf(%q) = %s %d %d %s", c.tres, kind, per, gpus, typ)
		}
	}
	// 24.11: shards per GPU.
	n := NodeOf("n3", "MIXED", []string{"inference"}, "gpu:l4:4(S:0-3),shard:l4:88(S:0-3)",
		"gpu:l4:1(IDX:3),shard:l4:20(10/22,10/22,0/22,0/0)", "cpu=2,gres/shard=20,gres/gpu=1")
	want := []GPU{{Index: 0, Model: "l4", Shards: 22, Used: 10}, {Index: 1, Model: "l4", Shards: 22, Used: 10},
		{Index: 2, Model: "l4", Shards: 22}, {Index: 3, Model: "l4", Whole: true}}
	if fmt.Sprint(n.GPUs) != fmt.Sprint(want) || !n.Usable {
		t.Errorf("24.11 node: %+v", n)
	}
	// 22.05: which GPUs hold shards, and the node's total.
	n = NodeOf("n3", "MIXED+DRAIN", []string{"inference"}, "gpu:l4:4(S:0-3),shard:l4:88(S:0-3)",
		"gpu:l4:0(IDX:N/A),shard:l4:2(IDX:0-1)", "cpu=2,gres/shard=20")
	if n.Usable || n.HiddenShards != 20 || n.GPUs[0].Used != -1 || n.GPUs[1].Used != -1 || n.GPUs[2].Used != 0 || n.GPUs[0].Shards != 22 {
		t.Errorf("22.05 node: %+v", n)
	}
	if f := freeShards(n.GPUs[0], n); f != 22 {
		t.Errorf("22.05: GPU 0 free at most %d, want 22 (44 slots on GPUs 0-1, 20 used)", f)
	}
	if f := nodeFree(n); f != 68 {
		t.Errorf("22.05: node free %d, want 68", f)
	}
	// The jobs the user sees hold 12 on GPU 0 and 4 on GPU 1: 4 are hidden.
	nodes := []Node{n}
	AddVisible(nodes, []Visible{{"n3", 0, 12}, {"n3", 1, 4}, {"n9", 0, 5}})
	if f := freeShards(nodes[0].GPUs[0], nodes[0]); f != 10 {
		t.Errorf("GPU 0 with 12 seen: at most %d free, want 10", f)
	}
	if f := freeShards(nodes[0].GPUs[1], nodes[0]); f != 18 {
		t.Errorf("GPU 1 with 4 seen, 4 hidden: at most %d free, want 18", f)
	}
	// All of it seen: the GPUs' use is known.
	nodes[0].HiddenShards = 4
	AddVisible(nodes, []Visible{{"n3", 1, 4}})
	if g := nodes[0].GPUs; g[0].Used != 12 || g[1].Used != 8 || g[2].Used != 0 || nodes[0].HiddenShards != 0 {
		t.Errorf("all seen: %+v", nodes[0])
	}
	// MIG: instances by profile.
	n = NodeOf("n2", "MIXED", []string{"train"}, "gpu:3g.40gb:1,gpu:1g.10gb:2", "gpu:3g.40gb:1(IDX:0),gpu:1g.10gb:1(IDX:2)", "")
	if len(n.GPUs) != 1 || n.GPUs[0].Index != -1 || fmt.Sprint(n.GPUs[0].MIG) != "[{3g.40gb true} {1g.10gb true} {1g.10gb false}]" {
		t.Errorf("MIG node: %+v", n)
	}
}
