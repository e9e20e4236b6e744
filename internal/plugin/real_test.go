package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/request"
)

// realPlugin is a plugin over the real admission core and a small mixed inventory:
// shared H100s, an A100 in MIG mode, whole L4s.
func realPlugin(tb testing.TB, sink *logSink) *Plugin {
	tb.Helper()
	p := New(realConf(tb), "job_submit/gpumem", sink, AdmitCore)
	// Registered after TempDir, so it runs first: the loader, which writes RefusalCounts
	// into dir, has stopped before dir is removed.
	tb.Cleanup(p.Close)
	if len(sink.errors) > 0 {
		tb.Fatalf("plugin did not load cleanly: %v", sink.errors)
	}
	return p
}

// realClient is cli_filter's plugin on the files of realPlugin.
func realClient(tb testing.TB) *Plugin {
	return NewClient(realConf(tb), "cli_filter/gpumem", &logSink{}, AdmitCore)
}

// realConf writes the files of realPlugin and returns its gpumem.conf.
func realConf(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	inv := `{"nodes": [
 {"name": "n1", "partitions": ["gpu", "train"], "gpus": [
  {"index": 0, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559},
  {"index": 1, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559}]},
 {"name": "n2", "partitions": ["gpu"], "gpus": [
  {"index": 0, "name": "NVIDIA A100-SXM4-40GB", "type": "a100", "memory_mib": 40960, "mig": true, "mig_instances": [
   {"profile": "3g.20gb", "memory_mib": 19968, "start": 4, "slices": 3},
   {"profile": "2g.10gb", "memory_mib": 9856, "start": 0, "slices": 2}]}]},
 {"name": "n3", "partitions": ["gpu"], "gpus": [
  {"index": 0, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034, "sharing": "whole"}]}]}`
	files := map[string]string{
		"inventory.json": inv,
		"slurm.conf":     "PartitionName=gpu Nodes=n[1-3] Default=YES\nPartitionName=train Nodes=n1\n",
		"gpumem.conf":    "InventoryPath = " + filepath.Join(dir, "inventory.json") + "\nSlurmConf = " + filepath.Join(dir, "slurm.conf") + "\nReloadInterval = 1h\nRefusalCounts = " + filepath.Join(dir, "refusals.json") + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return filepath.Join(dir, "gpumem.conf")
}

func TestRealCore(t *testing.T) {
	p := realPlugin(t, &logSink{})
	v := p.Submit(Fields{PerNode: "gres:gpu:mem:20g"})
	if v.Refusal != "" || v.Fields.PerNode != "gres:shard:20" {
		t.Fatalf("gpu:mem:20g: %+v", v)
	}
	v = p.Submit(Fields{PerNode: "gres:gpu:mem:500g"})
	if !strings.Contains(v.Refusal, "--gres=gpu:mem:500g") {
		t.Fatalf("gpu:mem:500g: %+v", v)
	}
	f := Fields{PerNode: "gres:gpu:mem:20g", Partition: "nosuch"}
	if v := p.Submit(f); v.Refusal == "" {
		t.Fatalf("a partition without GPUs admitted: %+v", v)
	}
}

// FuzzSubmit: whatever a user types, the core never panics (Submit would hide a panic
// behind OnError, so the log is checked) and a job that asks for no memory is untouched.
func FuzzSubmit(f *testing.F) {
	for _, s := range []string{"gres:gpu:mem:20g", "gres:gpu:2,gres:gpu:mem:40g", "gres/gpu:mem:1.5t", "gres:gpu:mem:abc", "gres:gpu:mem:-1g", "gres:gpu:mem:0", "gres:shard:3;gres:gpu:mem:99999999999999g", "gres:gpu:mem:20g,gres:gpu:mem:20g", ""} {
		f.Add(s, "", "")
	}
	f.Add("gres:gpu:mem:20g", "gres:gpu:h100:2", "train")
	sink := &logSink{}
	p := realPlugin(f, sink)
	f.Fuzz(func(t *testing.T, perNode, perJob, partition string) {
		in := Fields{PerNode: perNode, PerJob: perJob, Partition: partition}
		v := p.Submit(in)
		if len(sink.errors) > 0 {
			t.Fatalf("Submit(%+v) logged %v", in, sink.errors)
		}
		if !AsksMem(in) && v != (Verdict{Fields: in}) {
			t.Fatalf("Submit(%+v) = %+v; want it untouched", in, v)
		}
	})
}

// FuzzStep: a step's request and its job's GRES never make Step panic, and what it
// accepts leaves no gpu:mem for slurmctld to stumble on.
func FuzzStep(f *testing.F) {
	f.Add("gres:gpu:mem:10g", "gres:shard:20")
	f.Add("gres:gpu:2,gres:gpu:mem:10g", "gres:gpu:h100:2")
	f.Add("gres/gpu:mem:1m", "gres/shard:h100:x")
	f.Fuzz(func(t *testing.T, step, job string) {
		out, err := Step(step, Fields{PerNode: job}, 1, 1024, labMem)
		if err != nil {
			return
		}
		t2, err := request.Parse(request.PerNode, out)
		if err != nil || t2.Find(request.GPUMem) >= 0 {
			t.Fatalf("Step(%q, %q) = %q, which still asks for gpu:mem (%v)", step, job, out, err)
		}
	})
}

func BenchmarkSubmitUntouched(b *testing.B) {
	p := realPlugin(b, &logSink{})
	f := Fields{PerNode: "gres:gpu:h100:2", PerJob: "gres:license:3", Partition: "gpu"}
	b.ReportAllocs()
	for b.Loop() {
		p.Submit(f)
	}
}

func BenchmarkSubmitRewrite(b *testing.B) {
	p := realPlugin(b, &logSink{})
	f := Fields{PerNode: "gres:gpu:mem:20g"}
	b.ReportAllocs()
	for b.Loop() {
		if v := p.Submit(f); v.Fields.PerNode != "gres:shard:20" {
			b.Fatal(v)
		}
	}
}

// TestRealCoreSeesTheShape: the job's node list, exclusions, node count and the client's
// options all reach admission, so the form chosen is one the job's nodes have.
func TestRealCoreSeesTheShape(t *testing.T) {
	p := realPlugin(t, &logSink{})
	for _, c := range []struct {
		f    Fields
		want string // PerNode after, or a refusal holding it
	}{
		{Fields{PerNode: "gres:gpu:mem:8g", ReqNodes: "n2"}, "gres:gpu:2g.10gb:1"},
		{Fields{PerNode: "gres:gpu:mem:8g", ExcNodes: "n[1-2]"}, "gres:gpu:l4:1"},
		{Fields{PerNode: "gres:gpu:mem:8g", MinNodes: 2}, "nodes the job may use"},
		{Fields{PerNode: "gres:gpu:mem:30g", ReqNodes: "n3"}, "on node n3 the GPUs are NVIDIA L4"},
		{Options{Gres: "gres:gpu:mem:8g", NodeList: "n2"}.Fields("gres:"), "gres:gpu:2g.10gb:1"},
	} {
		v := p.Submit(c.f)
		if v.Fields.PerNode != c.want && !strings.Contains(v.Refusal, c.want) {
			t.Errorf("%+v: %+v, want %q", c.f, v, c.want)
		}
	}
}
