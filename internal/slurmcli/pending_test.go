package slurmcli

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParsePendingKeepsShardJobsInOrder(t *testing.T) {
	got, err := ParsePending("12|gpu|gres/shard:20\n13|gpu|gres/gpu:h100:1\n14|train,gpu|gres:shard:h100:5\n15|gpu|N/A\n", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pending{{ID: "12", Partitions: []string{"gpu"}, Shards: 20}, {ID: "14", Partitions: []string{"train", "gpu"}, Shards: 5, Type: "h100"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pending %+v, want %+v", got, want)
	}
	if _, err := ParsePending("12 gpu shard:20", time.UTC); err == nil || !strings.Contains(err.Error(), "%i|%P|%b|%n|%V") {
		t.Errorf("wrong format: err %v", err)
	}
	if _, err := ParsePending("12|gpu|gres/shard:20|n1|yesterday", time.UTC); err == nil || !strings.Contains(err.Error(), `submit time "yesterday"`) {
		t.Errorf("bad submit time: err %v", err)
	}
}

func TestParseNodes(t *testing.T) {
	got, err := ParseNodes("NodeName=n1 Arch=x86_64 CoresPerSocket=1 Gres=gpu:h100:2(S:0-15),shard:h100:160(S:0-15) OS=Linux 6.1.0 #1 SMP Weight=1 Owner=N/A\nNodeName=n3 Arch=x86_64 Weight=7 Owner=N/A\n")
	if err != nil || !reflect.DeepEqual(got, []Node{{Name: "n1", Weight: 1, Gres: "gpu:h100:2(S:0-15),shard:h100:160(S:0-15)"}, {Name: "n3", Weight: 7}}) {
		t.Errorf("nodes %+v, %v", got, err)
	}
	if _, err := ParseNodes("NodeName=n1 Arch=x86_64"); err == nil || !strings.Contains(err.Error(), "Weight=") {
		t.Errorf("missing weight: err %v", err)
	}
}

// TestGRESDetailForms: each form of a node's GRES detail recorded in the labs.
func TestGRESDetailForms(t *testing.T) {
	for detail, want := range map[string][]Use{
		"shard:20(20/80,0/80)":      {{Node: "n", GPU: 0, Shards: 20}},
		"shard:70(0/80,70/80)":      {{Node: "n", GPU: 1, Shards: 70}},
		"gpu:h100:1(IDX:1)":         {{Node: "n", GPU: 1, Whole: true}},
		"shard:h100:30(IDX:1)":      {{Node: "n", GPU: 1, Shards: 30}},
		"gres/shard:20(20/80,0/80)": {{Node: "n", GPU: 0, Shards: 20}},
		// Typed shards (ShardTypes = per-gpu): 24.11 prints one entry per type with the
		// job's shards on every GPU; 22.05 the index, empty for types it took none of.
		"shard:l4_g0:7(7/22,0/22,0/22,0/22),shard:l4_g1:0(0/22,0/22,0/22,0/22)": {{Node: "n", GPU: 0, Shards: 7}},
		"shard:h100_g0:24(IDX:0),shard:h100_g1:0(IDX:)":                         {{Node: "n", GPU: 0, Shards: 24}},
		"": nil,
	} {
		got, err := nodeUses("n", detail)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v, %v; want %+v", detail, got, err, want)
		}
	}
	if _, err := nodeUses("n", "shard:30(x/80)"); err == nil || !strings.Contains(err.Error(), "TAKEN/TOTAL") {
		t.Errorf("bad per-GPU use: err %v", err)
	}
}
