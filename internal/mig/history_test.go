package mig

import (
	"reflect"
	"testing"
)

func TestHistoryDemand(t *testing.T) {
	jobs := []HistoryJob{
		{Kind: "shard", AllocMiB: 20480, PeakMiB: 9000, GPUs: 1},
		{Kind: "shard", AllocMiB: 20480, PeakMiB: 0, GPUs: 1}, // held nothing: its allocation
		{Kind: "mig", AllocMiB: 2 * 4864, PeakMiB: 3000, GPUs: 2},
		{Kind: "gpu", AllocMiB: 81920, PeakMiB: 70000, GPUs: 1}, // whole GPU: no size asked
		{Kind: "unknown", AllocMiB: 0, PeakMiB: 5000, GPUs: 1},  // allocation unread
		{Kind: "shard", AllocMiB: 10241, PeakMiB: 100, GPUs: 0}, // 0 devices counts as 1
		{Kind: "shard", AllocMiB: 10241, PeakMiB: 100, GPUs: 2}, // rounded up per device
	}
	got := HistoryDemand(jobs, HistoryOptions{Weight: 1})
	want := []Demand{{MiB: 4864, Weight: 2}, {MiB: 5121, Weight: 2}, {MiB: 10241, Weight: 1}, {MiB: 20480, Weight: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("by allocation: %+v\nwant %+v", got, want)
	}
	got = HistoryDemand(jobs, HistoryOptions{Peak: true, Weight: 0.5})
	want = []Demand{{MiB: 50, Weight: 1}, {MiB: 100, Weight: 0.5}, {MiB: 1500, Weight: 1}, {MiB: 9000, Weight: 0.5}, {MiB: 20480, Weight: 0.5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("by peak, weight 0.5: %+v\nwant %+v", got, want)
	}
	if got := HistoryDemand(jobs, HistoryOptions{}); got != nil {
		t.Fatalf("weight 0 still made demand: %+v", got)
	}
}
