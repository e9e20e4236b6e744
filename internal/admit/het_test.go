package admit

import (
	"strings"
	"testing"
)

func TestMatched(t *testing.T) {
	cases := []struct {
		sets [][]string
		want int
	}{
		{nil, 0},
		{[][]string{{"n1"}, {"n1"}}, 1},
		{[][]string{{"n1", "n2"}, {"n1"}}, 2}, // the first moves over to n2
		{[][]string{{"n1", "n2", "n3"}, {"n1", "n2", "n3"}, {"n1", "n2", "n3"}, {"n1"}}, 3},
		{[][]string{{}, {"n2"}}, 1},
	}
	for _, c := range cases {
		if got := matched(c.sets); got != c.want {
			t.Errorf("matched(%v) = %d, want %d", c.sets, got, c.want)
		}
	}
}

// hetComponents decides a heterogeneous job's components in order, as the client does,
// each with the hosts of those before it; it returns each one's GRES or refusal.
func hetComponents(t *testing.T, a *Admitter, comps ...Job) []string {
	t.Helper()
	var sib [][]string
	var out []string
	for _, j := range comps {
		j.HetJob, j.HetSiblings = true, sib
		d, err := a.Admit(j)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		out = append(out, d.TresPerNode)
		sib = append(sib, a.Hosts(j, d)...)
	}
	return out
}

// Slurm starts a heterogeneous job's components in order, each on nodes the ones before
// it left, choosing without looking ahead. A component that only n1 holds, after one that
// may take n1 first, would never start (seen on the 24.11 lab: held for ever): refused,
// naming the node and what would run. The same two in the other order run.
func TestHetComponentAfterOneThatMayTakeItsNode(t *testing.T) {
	a := labAdmitter(t)
	small := Job{TresPerNode: "gres/gpu:mem:4g", Partitions: []string{"gpu", "inference"}}
	big := Job{TresPerNode: "gres/gpu:2,gres/gpu:mem:19g", Partitions: []string{"train"}, Features: "h100|l4"}

	got := hetComponents(t, a, small, big)
	if strings.HasPrefix(got[0], "gpumem:") {
		t.Fatalf("first component refused: %s", got[0])
	}
	for _, w := range []string{"heterogeneous job", "(n1)", "Put this component first", "--exclude", "--gpus-per-node=2"} {
		if !strings.Contains(got[1], w) {
			t.Errorf("second component: %q\nwant it to say %q", got[1], w)
		}
	}

	got = hetComponents(t, a, big, small)
	for i, g := range got {
		if strings.HasPrefix(g, "gpumem:") {
			t.Errorf("in the other order, component %d refused: %s", i, g)
		}
	}
	// Kept off n1, the small one leaves it to the big one.
	small.ExcNodes = "n1"
	got = hetComponents(t, a, small, big)
	for i, g := range got {
		if strings.HasPrefix(g, "gpumem:") {
			t.Errorf("with --exclude=n1 first, component %d refused: %s", i, g)
		}
	}
}

// Components that may share a set of nodes run when the set is big enough for all of
// them however the ones before choose; the one too many is refused.
func TestHetComponentsCountNodes(t *testing.T) {
	a := labAdmitter(t)
	c := Job{TresPerNode: "gres:gpu:mem:30g"} // only n1 (two H100s) holds 30g
	got := hetComponents(t, a, c, c)
	if !strings.Contains(got[1], "heterogeneous job") {
		t.Errorf("two 30g components need n1 each: %q", got)
	}
	c = Job{TresPerNode: "gres:gpu:mem:4g"} // n1, n2 (MIG 1g.5gb) and n3 hold 4g
	got = hetComponents(t, a, c, c, c)
	for i, g := range got {
		if strings.HasPrefix(g, "gpumem:") {
			t.Errorf("component %d of three 4g: %s", i, g)
		}
	}
}

// A required node fills one node of a component by itself, and its other nodes may be
// any that hold its form. Seen on the 26.05 lab: -w n3 -N 2 -C 'h100|l4' (so n3 and n1)
// before a component kept off n2 (so n1 or n3) was taken as needing n3 alone, and the job
// pended for ever.
func TestHetRequiredNodeIsOneOfItsNodes(t *testing.T) {
	a := labAdmitter(t)
	two := Job{TresPerNode: "gres:gpu:mem:10g", Partitions: []string{"gpu", "inference"}, ReqNodes: "n3", MinNodes: 2, Features: "h100|l4"}
	off := Job{TresPerNode: "gres:gpu:mem:3g", ExcNodes: "n2"}
	for _, order := range [][]Job{{two, off}, {off, two}} {
		got := hetComponents(t, a, order...)
		if strings.HasPrefix(got[0], "gpumem:") || !strings.Contains(got[1], "heterogeneous job") {
			t.Errorf("three nodes of n1,n3: want the second component refused, got %q", got)
		}
	}
	// Off n3, the second component has n1 or n2 whichever other node the first takes.
	off.ExcNodes = "n3"
	two.Features = ""
	if got := hetComponents(t, a, two, off); strings.HasPrefix(got[1], "gpumem:") {
		t.Errorf("second component refused though two nodes are left for it: %q", got[1])
	}
	// A required node an earlier component may take is lost.
	one := Job{TresPerNode: "gres:gpu:mem:4g", ReqNodes: "n3"}
	if got := hetComponents(t, a, Job{TresPerNode: "gres:gpu:mem:4g"}, one); !strings.Contains(got[1], "(n") {
		t.Errorf("-w n3 after a component that may take n3: %q", got[1])
	}
	if got := hetComponents(t, a, one, Job{TresPerNode: "gres:gpu:mem:4g", ExcNodes: "n3"}); strings.HasPrefix(got[1], "gpumem:") {
		t.Errorf("a component kept off the first's required node: %q", got[1])
	}
}

// Slurm's backfill plans a job once per partition it names, and each plan of a
// heterogeneous component holds its nodes until the whole job can start. Seen on the 24.11
// lab: 4g in train,inference (n1 or n3) then 4g in gpu,inference (n1 or n3) pended for
// ever on an idle cluster, the first component's two plans holding n1 and n3 both. Each
// component now gets one partition, and the two land on different nodes.
func TestHetComponentGetsOnePartition(t *testing.T) {
	a := labAdmitter(t)
	first := Job{TresPerNode: "gres/gpu:mem:4g", Partitions: []string{"train", "inference"}, HetJob: true}
	d1, err := a.Admit(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(d1.Partitions) != 1 {
		t.Fatalf("first component: partitions %v, want one", d1.Partitions)
	}
	h := a.Hosts(first, d1)
	second := Job{TresPerNode: "gres/gpu:mem:4g", Partitions: []string{"gpu", "inference"}, HetJob: true, HetSiblings: h}
	d2, err := a.Admit(second)
	if err != nil {
		t.Fatalf("second component after %v (%s in %v): %v", h, d1.GRES, d1.Partitions, err)
	}
	if len(d2.Partitions) != 1 {
		t.Errorf("second component: partitions %v, want one", d2.Partitions)
	}
	// A job of its own keeps every partition that serves its form.
	single := first
	single.HetJob = false
	if d, err := a.Admit(single); err != nil || len(d.Partitions) != 0 && len(d.Partitions) != 2 {
		t.Errorf("a job of its own: partitions %v, %v; want both kept", d.Partitions, err)
	}
}

// A first component the client could not tell from a job of its own (a batch script's
// "#SBATCH hetjob" components) keeps two partitions, so it may hold a node in each: a
// later component that only those two nodes hold is refused, naming -p, rather than
// accepted to pend for ever.
func TestHetComponentAfterOneInTwoPartitions(t *testing.T) {
	a := labAdmitter(t)
	first := Job{TresPerNode: "gres/gpu:mem:4g", Partitions: []string{"train", "inference"}}
	d1, err := a.Admit(first)
	if err != nil {
		t.Fatal(err)
	}
	h := a.Hosts(first, d1)
	if len(h) != 2 {
		t.Fatalf("hosts of a job in two partitions: %v, want a node set for each", h)
	}
	second := Job{TresPerNode: "gres/gpu:mem:10g", Features: "h100|l4", HetJob: true, HetSiblings: h}
	_, err = a.Admit(second)
	if err == nil || !strings.Contains(err.Error(), "heterogeneous job") || !strings.Contains(err.Error(), "(-p)") {
		t.Errorf("after a component holding n1 and n3: %v; want a refusal that names -p", err)
	}
}
