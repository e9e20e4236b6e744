package plugin

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fenceInventory: n1's H100s have driver limits; n3's L4s (22 shards each) have none.
// Partition gpu holds both, safe only n1.
const fenceInventory = `{"version": 2, "nodes": [
 {"name": "n1", "partitions": ["gpu", "safe"], "gpus": [
  {"index": 0, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559, "fence": "driver"},
  {"index": 1, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559, "fence": "driver"}]},
 {"name": "n3", "partitions": ["gpu", "inference"], "gpus": [
  {"index": 0, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034, "fence": "none"},
  {"index": 1, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034, "fence": "none"},
  {"index": 2, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034},
  {"index": 3, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034}]}]}`

// fencePlugin is job_submit over the real core, fenceInventory and gpumem.conf's conf.
func fencePlugin(t *testing.T, conf string) (*Plugin, *logSink) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"inventory.json": fenceInventory,
		"slurm.conf":     "PartitionName=gpu Nodes=n1,n3 Default=YES\nPartitionName=safe Nodes=n1\nPartitionName=inference Nodes=n3\n",
		"gpumem.conf": "InventoryPath = " + filepath.Join(dir, "inventory.json") + "\nSlurmConf = " + filepath.Join(dir, "slurm.conf") +
			"\nRefusalCounts = " + filepath.Join(dir, "refusals.json") + "\nLogLevel = verbose\n" + conf,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sink := &logSink{}
	p := newPlugin(filepath.Join(dir, "gpumem.conf"), "job_submit/gpumem", sink, AdmitCore, time.Now, false)
	p.reload()
	if len(sink.errors) > 0 {
		t.Fatalf("plugin did not load cleanly: %v", sink.errors)
	}
	return p, sink
}

// gpumem.conf's Fence reaches admission through the plugin: with require, no job is
// given shards in a partition where an unfenced GPU could take them, and the log line
// says which fence the slice gets.
func TestPluginFenceRequire(t *testing.T) {
	if p, _ := fencePlugin(t, ""); p.Submit(Fields{PerNode: "gres:gpu:mem:20g"}).Fields.PerNode != "gres:shard:20" {
		t.Fatal("Fence = off does not give gpu:mem:20g as shards on this inventory")
	}
	p, sink := fencePlugin(t, "Fence = require\n")
	for _, k := range []struct {
		f              Fields
		perNode, parts string
	}{
		{Fields{PerNode: "gres:gpu:mem:20g"}, "gres:gpu:l4:1", ""},                        // an L4 could take 20 shards: a whole one
		{Fields{PerNode: "gres:gpu:mem:20g", Partition: "safe"}, "gres:shard:20", "safe"}, // only fenced GPUs
		{Fields{PerNode: "gres:gpu:mem:30g"}, "gres:shard:30", ""},                        // no L4 holds 30 shards
		{Fields{PerNode: "gres:gpu:mem:10g", Partition: "inference"}, "gres:gpu:l4:1", "inference"},
	} {
		v := p.Submit(k.f)
		if v.Refusal != "" || v.Fields.PerNode != k.perNode || v.Fields.Partition != k.parts {
			t.Errorf("%+v: got %q in %q, refusal %q; want %q in %q", k.f, v.Fields.PerNode, v.Fields.Partition, v.Refusal, k.perNode, k.parts)
		}
	}
	if !sink.has("gpu:mem:20g x1 per node -> shard:20 in safe; fence driver") || !sink.has("-> gpu:l4:1 in inference; fence whole GPU") {
		t.Errorf("the log lines do not name the fence: %v", sink.infos)
	}
}

// Pinning (ShardTypes = per-gpu) places within the partitions admission chose, so under
// require a gpu:mem job is never pinned to shards of an unfenced GPU.
func TestPinningUnderFenceRequire(t *testing.T) {
	h := newPinHarness(t, "ShardTypes = per-gpu\nPinPolicy = best-fit\nFence = require\n")
	h.write("inventory.json", fenceInventory)
	h.snapshot(nil)
	h.want(Fields{PerNode: "gres/gpu:mem:20g"}, "gres/gpu:l4:1", "")           // best fit would pin it to an L4's shards
	h.want(Fields{PerNode: "gres/gpu:mem:30g"}, "gres/shard:h100_g0:30", "n1") // no L4 holds 30 shards
}
