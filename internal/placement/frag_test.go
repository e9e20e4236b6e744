package placement

import (
	"math"
	"testing"
)

func TestTargetShapesKeepTheCommonOnes(t *testing.T) {
	share := Demand{CPU: 4000, GPUs: 1, Units: 500, Kinds: Shard}
	whole := Demand{CPU: 8000, GPUs: 2, Units: 1000, Kinds: Whole}
	cpu := Demand{CPU: 2000}
	rare := Demand{CPU: 1000, GPUs: 8, Units: 1000, Kinds: Whole}
	var ds []Demand
	for range 10 {
		ds = append(ds, share)
	}
	for range 6 {
		ds = append(ds, whole)
	}
	for range 3 {
		ds = append(ds, cpu)
	}
	ds = append(ds, rare)
	got := TargetShapes(ds, 0.95)
	if len(got) != 3 {
		t.Fatalf("%d shapes, want 3 (the rare one is past 95%%): %+v", len(got), got)
	}
	if got[0].Units != 500 || got[1].GPUs != 2 || got[2].GPUs != 0 {
		t.Fatalf("shapes not most frequent first: %+v", got)
	}
	if sum := got[0].Freq + got[1].Freq + got[2].Freq; math.Abs(sum-1) > 1e-9 || math.Abs(got[0].Freq-10.0/19) > 1e-9 {
		t.Fatalf("frequencies %v, want 10/19, 6/19, 3/19", []float64{got[0].Freq, got[1].Freq, got[2].Freq})
	}
}

func TestFragCountsWhatTheShapesCannotUse(t *testing.T) {
	v := nodeView{cpu: 8000, gpus: []gpuView{{"T4", 1000, 300}, {"T4", 1000, 1000}}}
	cases := []struct {
		name  string
		shape Shape
		want  float64
	}{
		{"half GPU fits on one: the 300 left on the other is lost", Shape{CPU: 4000, GPUs: 1, Units: 500}, 300},
		{"no GPU needed: all idle GPU is lost to it", Shape{CPU: 1000}, 1300},
		{"too much CPU: all lost", Shape{CPU: 9000, GPUs: 1, Units: 100}, 1300},
		{"two whole GPUs: only one is free, all lost", Shape{GPUs: 2, Units: 1000}, 1300},
		{"other model: all lost", Shape{GPUs: 1, Units: 100, Models: []string{"A10"}}, 1300},
		{"small share fits everywhere: nothing lost", Shape{GPUs: 1, Units: 200}, 0},
	}
	for _, c := range cases {
		c.shape.Freq = 0.5
		if got := fragOf(&v, []Shape{c.shape}); got != c.want*0.5 {
			t.Errorf("%s: frag %v, want %v", c.name, got, c.want*0.5)
		}
	}
}

// twoNodes has one GPU half used on node 0 and an idle GPU on node 1.
func twoNodes() *State {
	nodes := []Node{
		{Name: "a", CPU: 16000, Mem: 1000, Devices: []Device{{Model: "T4", Capacity: 1000, Used: 500, Shareable: true}}},
		{Name: "b", CPU: 16000, Mem: 1000, Devices: []Device{{Model: "T4", Capacity: 1000, Shareable: true}}},
	}
	nodes[0].UsedCPU = 1000
	return NewState(nodes)
}

func TestFragPoliciesKeepWholeGPUsFree(t *testing.T) {
	// The workload mostly wants whole GPUs: a half share belongs on the half-used GPU.
	shapes := []Shape{{CPU: 1000, GPUs: 1, Units: 1000, Freq: 1}}
	d := Demand{CPU: 1000, Mem: 10, GPUs: 1, Units: 500, Kinds: Shard}
	for _, p := range []Policy{NewFGD(shapes, 1), NewOurs(shapes), NewGPUPacking(1)} {
		s := twoNodes()
		c, ok := p.Place(s, &d)
		if !ok || c.Node != 0 || c.Kind != Shard || len(c.Devices) != 1 {
			t.Errorf("%s chose %+v, %v; want the half-used GPU of node a", p.Name(), c, ok)
		}
	}
}

func TestFGDScoreIsTheSimulators(t *testing.T) {
	if fgdScore(0) != 50 || fgdScore(1000) != 73 || fgdScore(-1000) != 26 {
		t.Fatalf("fgdScore(0, 1000, -1000) = %v %v %v, want 50 73 26", fgdScore(0), fgdScore(1000), fgdScore(-1000))
	}
}

func TestWithMemoryStrandsGPUsOnFullMemory(t *testing.T) {
	big := Demand{CPU: 1000, Mem: 300, GPUs: 2, Units: 1000, Kinds: Whole}
	ds := []Demand{big, big, {CPU: 1000, Mem: 100, GPUs: 2, Units: 1000, Kinds: Whole}}
	shapes := WithMemory(TargetShapes(ds, 1), ds)
	if len(shapes) != 1 || shapes[0].Mem != 300 {
		t.Fatalf("shapes %+v, want one 2-GPU shape with its usual memory 300", shapes)
	}
	nd := Node{CPU: 8000, Mem: 1000, UsedMem: 800, Devices: []Device{{Model: "T4", Capacity: 1000}, {Model: "T4", Capacity: 1000}}}
	withMem, without := viewOf(&nd, true), viewOf(&nd, false)
	if got := fragOf(&withMem, shapes); got != 2000 {
		t.Errorf("with memory counted: frag %v, want both idle GPUs (2000) lost to a task that needs 300 of the 200 left", got)
	}
	if got := fragOf(&without, TargetShapes(ds, 1)); got != 0 {
		t.Errorf("FGD's shapes and view (no memory): frag %v, want 0", got)
	}
}

// TestTrialsTellMemoryApart: with memory in the views, two demands that differ only in
// memory must not share a memoised outcome.
func TestTrialsTellMemoryApart(t *testing.T) {
	shapes := []Shape{{CPU: 1000, Mem: 500, GPUs: 1, Units: 1000, Freq: 1}}
	s := NewState([]Node{{Name: "a", CPU: 8000, Mem: 1000, Devices: []Device{{Model: "T4", Capacity: 1000}, {Model: "T4", Capacity: 1000}}}})
	c := newFragCache(shapes, func(d float64) float64 { return d })
	var light, heavy trial
	c.each(s, &Demand{CPU: 1000, Mem: 100}, func(_ int, tr trial) { light = tr })
	c.each(s, &Demand{CPU: 1000, Mem: 600}, func(_ int, tr trial) { heavy = tr })
	// After 600 of 1000 MiB the node cannot host the shape's 500: both idle GPUs are lost.
	if light.delta != 0 || heavy.delta != -2000 {
		t.Fatalf("decreases light %v heavy %v, want 0 and -2000", light.delta, heavy.delta)
	}
}
