package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/admit"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
)

// logSink keeps what the plugin logged, by level.
type logSink struct{ errors, infos, debugs []string }

func (s *logSink) Error(m string) { s.errors = append(s.errors, m) }
func (s *logSink) Info(m string)  { s.infos = append(s.infos, m) }
func (s *logSink) Debug(m string) { s.debugs = append(s.debugs, m) }

func (s *logSink) has(sub string) bool {
	for _, m := range append(append(s.errors, s.infos...), s.debugs...) {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// fakeCore answers with a function, and records which inventory it was built for.
type fakeCore struct {
	nodes int
	admit func(admit.Job) (admit.Decision, error)
}

func (c *fakeCore) AdmitWith(j admit.Job, _ *admit.Usage) (admit.Decision, error) { return c.admit(j) }

// shardCore rewrites gpu:mem:20g into shard:20, as the real core does on a shared GPU.
func shardCore(j admit.Job) (admit.Decision, error) {
	if j.TresPerNode != "gres:gpu:mem:20g" {
		return admit.Decision{}, fmt.Errorf("cannot read %q", j.TresPerNode)
	}
	d := admit.Decision{Job: j, Changed: true, GRES: "shard:20", Explain: "gpu:mem:20g -> shard:20"}
	d.TresPerNode = "gres:shard:20"
	return d, nil
}

type harness struct {
	t      *testing.T
	dir    string
	inv    string
	sink   *logSink
	builds []int // nodes of each inventory a core was built for
	defs   [][]string
	admit  func(admit.Job) (admit.Decision, error)
	clock  time.Time
}

func newHarness(t *testing.T, conf string) *harness {
	h := &harness{t: t, dir: t.TempDir(), sink: &logSink{}, admit: shardCore, clock: time.Unix(1_700_000_000, 0)}
	h.inv = filepath.Join(h.dir, "inventory.json")
	h.writeInventory(1)
	h.write("slurm.conf", "NodeName=n1 CPUs=4\nPartitionName=debug Nodes=n1\nPartitionName=gpu Nodes=n1 Default=YES # the GPUs\n")
	h.write("gpumem.conf", fmt.Sprintf("InventoryPath = %s\nSlurmConf = %s\nRefusalCounts = %s\nLogLevel = debug\n%s", h.inv, filepath.Join(h.dir, "slurm.conf"), filepath.Join(h.dir, "refusals.json"), conf))
	return h
}

func (h *harness) write(name, body string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(body), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// writeInventory writes an inventory of n nodes with a new modification time.
func (h *harness) writeInventory(n int) {
	h.t.Helper()
	var c inventory.Cluster
	for i := range n {
		c.Nodes = append(c.Nodes, inventory.Node{Name: fmt.Sprintf("n%d", i+1), Partitions: []string{"gpu"},
			GPUs: []inventory.GPU{{Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMiB: 81559}}})
	}
	b, err := c.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	h.writeRaw(b)
}

func (h *harness) writeRaw(b []byte) {
	h.t.Helper()
	if err := os.WriteFile(h.inv, b, 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.clock = h.clock.Add(time.Second)
	if err := os.Chtimes(h.inv, h.clock, h.clock); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) newCore(cfg config.Config, inv inventory.Cluster, defs []string) (Core, error) {
	h.builds = append(h.builds, len(inv.Nodes))
	h.defs = append(h.defs, defs)
	return &fakeCore{nodes: len(inv.Nodes), admit: func(j admit.Job) (admit.Decision, error) { return h.admit(j) }}, nil
}

func (h *harness) now() time.Time { return h.clock }

func (h *harness) plugin() *Plugin {
	p := newPlugin(filepath.Join(h.dir, "gpumem.conf"), "job_submit/gpumem", h.sink, h.newCore, h.now, false)
	p.reload()
	return p
}

// tickSubmit is a submit right after the loader's look at the files, as it happens when
// the loader's timer fires at the harness's clock: the tests drive the loader by hand.
func (p *Plugin) tickSubmit(f Fields) Verdict {
	p.reload()
	return p.Submit(f)
}

func TestUntouchedJobNeverReachesTheCore(t *testing.T) {
	h := newHarness(t, "")
	h.admit = func(admit.Job) (admit.Decision, error) { t.Fatal("core called"); return admit.Decision{}, nil }
	p := h.plugin()
	for _, f := range []Fields{{}, {PerNode: "gres:gpu:2", PerJob: "gres:gpu:h100:1", Partition: "gpu"}, {PerTask: "gres:shard:3"}} {
		if v := p.tickSubmit(f); v.Fields != f || v.Refusal != "" {
			t.Errorf("Submit(%+v) = %+v; want it unchanged", f, v)
		}
	}
}

func TestRewriteAndDefaultPartition(t *testing.T) {
	h := newHarness(t, "")
	p := h.plugin()
	v := p.tickSubmit(Fields{PerNode: "gres:gpu:mem:20g", PerJob: "gres:license:1"})
	want := Fields{PerNode: "gres:shard:20", PerJob: "gres:license:1"}
	if v.Refusal != "" || v.Fields != want {
		t.Fatalf("got %+v; want %+v", v, want)
	}
	if len(h.defs) != 1 || len(h.defs[0]) != 1 || h.defs[0][0] != "gpu" {
		t.Errorf("core built with default partitions %v; want [gpu] from slurm.conf", h.defs)
	}
	if !h.sink.has("gpu:mem:20g -> shard:20") {
		t.Errorf("decision not logged at LogLevel=debug: %+v", h.sink)
	}
}

func TestPartitionsThePoolsChoseAreWritten(t *testing.T) {
	h := newHarness(t, "")
	h.admit = func(j admit.Job) (admit.Decision, error) {
		d, err := shardCore(j)
		d.Partitions = []string{"small", "gpu"}
		return d, err
	}
	v := h.plugin().tickSubmit(Fields{PerNode: "gres:gpu:mem:20g"})
	if v.Fields.Partition != "small,gpu" {
		t.Fatalf("partition %q; want small,gpu", v.Fields.Partition)
	}
}

func TestJobPartitionIsPassedSplit(t *testing.T) {
	h := newHarness(t, "")
	var got []string
	h.admit = func(j admit.Job) (admit.Decision, error) { got = j.Partitions; return admit.Decision{Job: j}, nil }
	f := Fields{PerNode: "gres:gpu:mem:20g", Partition: "a,b"}
	if v := h.plugin().tickSubmit(f); v.Fields != f {
		t.Fatalf("unchanged decision rewrote the job: %+v", v)
	}
	if strings.Join(got, "|") != "a|b" {
		t.Fatalf("core saw partitions %q; want [a b]", got)
	}
}

func TestRefusalReachesTheUser(t *testing.T) {
	h := newHarness(t, "")
	h.admit = func(admit.Job) (admit.Decision, error) {
		return admit.Decision{}, errors.New("largest GPU in partition gpu has 79.6 GiB; you asked for 500 GiB per GPU")
	}
	f := Fields{PerNode: "gres:gpu:mem:500g"}
	v := h.plugin().tickSubmit(f)
	if v.Refusal != "largest GPU in partition gpu has 79.6 GiB; you asked for 500 GiB per GPU" || v.Fields != f {
		t.Fatalf("got %+v", v)
	}
}

// A gpu:mem job Slurm gets untranslated can never run: whatever OnError says, job_submit
// refuses it with a "try again" message when gpumem itself fails.
func TestPanicInCore(t *testing.T) {
	for _, tc := range []struct{ conf, refusal string }{
		{"OnError = open\n", "gpumem cannot place GPU memory requests right now (internal error: boom); please try again later or tell your administrator"},
		{"OnError = closed\n", "gpumem cannot place GPU memory requests right now (internal error: boom); please try again later or tell your administrator"},
	} {
		h := newHarness(t, tc.conf)
		h.admit = func(admit.Job) (admit.Decision, error) { panic("boom") }
		f := Fields{PerNode: "gres:gpu:mem:20g"}
		v := h.plugin().tickSubmit(f)
		if v.Fields != f || v.Refusal != tc.refusal {
			t.Errorf("%s: got %+v; want fields unchanged, refusal %q", tc.conf, v, tc.refusal)
		}
		if !h.sink.has("internal error: boom") || !h.sink.has("goroutine") {
			t.Errorf("%s: panic not logged with its stack: %v", tc.conf, h.sink.errors)
		}
	}
}

func TestNoInventory(t *testing.T) {
	for _, tc := range []struct{ conf, refusal string }{
		{"OnError = open\n", "gpumem cannot place GPU memory requests right now (inventory "},
		{"OnError = closed\n", "gpumem cannot place GPU memory requests right now (inventory "},
	} {
		h := newHarness(t, tc.conf)
		if err := os.Remove(h.inv); err != nil {
			t.Fatal(err)
		}
		p := h.plugin()
		f := Fields{PerNode: "gres:gpu:mem:20g"}
		v := p.tickSubmit(f)
		if v.Fields != f || !strings.HasPrefix(v.Refusal, tc.refusal) || (tc.refusal == "") != (v.Refusal == "") {
			t.Errorf("%s: got %+v; want refusal %q", tc.conf, v, tc.refusal)
		}
		if !h.sink.has("no such file or directory") {
			t.Errorf("%s: missing inventory not logged: %v", tc.conf, h.sink.errors)
		}
		// The inventory appears: the next job finds it without a restart.
		h.writeInventory(2)
		if v := p.tickSubmit(f); v.Fields.PerNode != "gres:shard:20" {
			t.Errorf("%s: after the inventory appeared got %+v", tc.conf, v)
		}
	}
}

func TestBrokenConfigLoadsWithDefaultsAndSaysSo(t *testing.T) {
	h := newHarness(t, "OnError = sometimes\n")
	p := h.plugin()
	if p.Config().OnError != config.Open {
		t.Errorf("OnError %q; want the default open", p.Config().OnError)
	}
	if !h.sink.has(`OnError = "sometimes": want open`) {
		t.Errorf("config error not logged: %v", h.sink.errors)
	}
}

func TestReloadIsBoundedAndKeepsTheLastGood(t *testing.T) {
	h := newHarness(t, "ReloadInterval = 10s\n")
	p := h.plugin()
	job := Fields{PerNode: "gres:gpu:mem:20g"}
	p.tickSubmit(job)
	if len(h.builds) != 1 {
		t.Fatalf("built %v; want one core at start", h.builds)
	}

	h.writeInventory(3) // moves the clock 1s: within the interval, not looked at
	p.tickSubmit(job)
	if len(h.builds) != 1 {
		t.Fatalf("inventory looked at within ReloadInterval: %v", h.builds)
	}
	h.clock = h.clock.Add(10 * time.Second)
	p.tickSubmit(job)
	if fmt.Sprint(h.builds) != "[1 3]" {
		t.Fatalf("built %v; want the 3-node inventory after the interval", h.builds)
	}

	h.writeRaw([]byte(`{"nodes": [`))
	h.clock = h.clock.Add(10 * time.Second)
	if v := p.tickSubmit(job); v.Fields.PerNode != "gres:shard:20" {
		t.Fatalf("broken inventory stopped admission: %+v", v)
	}
	h.clock = h.clock.Add(10 * time.Second)
	p.tickSubmit(job)
	n := 0
	for _, e := range h.sink.errors {
		if strings.Contains(e, "keeping the inventory loaded before") {
			n++
		}
	}
	if n != 1 || fmt.Sprint(h.builds) != "[1 3]" {
		t.Fatalf("broken inventory: logged %d times (want once), builds %v (want [1 3])", n, h.builds)
	}

	h.writeInventory(2)
	h.clock = h.clock.Add(10 * time.Second)
	p.tickSubmit(job)
	if fmt.Sprint(h.builds) != "[1 3 2]" {
		t.Fatalf("fixed inventory not taken: %v", h.builds)
	}
}

func TestInventoryDirectory(t *testing.T) {
	h := newHarness(t, "ReloadInterval = 0\n")
	dir := filepath.Join(h.dir, "gpumem.d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.write("gpumem.conf", fmt.Sprintf("InventoryPath = %s\nReloadInterval = 0\n", dir))
	node := func(name string) []byte {
		return []byte(fmt.Sprintf(`{"nodes":[{"name":%q,"partitions":["gpu"],"gpus":[{"index":0,"name":"NVIDIA L4","type":"l4","memory_mib":23034}]}]}`, name))
	}
	if err := os.WriteFile(filepath.Join(dir, "n1.json"), node("n1"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.plugin()
	if err := os.WriteFile(filepath.Join(dir, "n2.json"), node("n2"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.tickSubmit(Fields{PerNode: "gres:gpu:mem:20g"})
	if fmt.Sprint(h.builds) != "[1 2]" {
		t.Fatalf("built %v; want a node added to the directory picked up", h.builds)
	}
}

func TestCoreBuildErrorKeepsTheLastGood(t *testing.T) {
	h := newHarness(t, "ReloadInterval = 0\n")
	build := h.newCore
	p := newPlugin(filepath.Join(h.dir, "gpumem.conf"), "job_submit/gpumem", h.sink, func(cfg config.Config, inv inventory.Cluster, d []string) (Core, error) {
		if len(inv.Nodes) == 2 {
			return nil, errors.New(`pool partition "small" has no GPU node`)
		}
		return build(cfg, inv, d)
	}, h.now, false)
	p.reload()
	h.writeInventory(2)
	if v := p.tickSubmit(Fields{PerNode: "gres:gpu:mem:20g"}); v.Fields.PerNode != "gres:shard:20" {
		t.Fatalf("got %+v", v)
	}
	if !h.sink.has(`pool partition "small" has no GPU node; keeping the inventory loaded before`) {
		t.Fatalf("not logged: %v", h.sink.errors)
	}
}

// TestAsksMem: a gpu:mem entry in any of the four fields makes the job gpumem's; "mem"
// anywhere else (another GRES, another case, which the parser does not take for
// gpu:mem) does not.
func TestAsksMem(t *testing.T) {
	for s, want := range map[string]bool{"gres:gpu:mem:20g": true, "gres/gpu:mem:x": true, "GPU:MEM:1G": false, "gres:gpu:2": false, "": false, "me": false, "gres/gpu:Mem:3g": false} {
		for _, f := range []Fields{{PerNode: s}, {PerJob: s}, {PerSocket: s}, {PerTask: s}} {
			if AsksMem(f) != want {
				t.Errorf("AsksMem(%+v) = %v", f, !want)
			}
		}
	}
}

func TestDefaultPartition(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		"PartitionName=a Nodes=n1\npartitionname=b nodes=n1 default=yes\n": "b",
		"PartitionName=a Nodes=n1 # Default=YES\n":                         "",
		"": "",
	} {
		p := filepath.Join(dir, "slurm.conf")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := DefaultPartition(p); err != nil || got != want {
			t.Errorf("DefaultPartition(%q) = %q, %v; want %q", body, got, err, want)
		}
	}
	if got, err := DefaultPartition(filepath.Join(dir, "absent")); err != nil || got != "" {
		t.Errorf("missing slurm.conf: %q, %v; want none and no error", got, err)
	}
	if _, err := DefaultPartition(dir); err == nil {
		t.Error("a directory read as slurm.conf gave no error")
	}
}

func TestClientReadsTheInventoryOnlyWhenAsked(t *testing.T) {
	h := newHarness(t, "")
	p := NewClient(filepath.Join(h.dir, "gpumem.conf"), "cli_filter/gpumem", h.sink, h.newCore)
	p.SubmitOptions(Options{Gres: "gres:gpu:1"}, 0, Fields{})
	p.SubmitOptions(Options{Gres: "gres:gpu:mem:10g"}, 9, Fields{PerNode: "gres:shard:20"})
	if len(h.builds) != 0 {
		t.Fatalf("inventory read for commands that need none: %v", h.builds)
	}
	if o, _ := p.SubmitOptions(Options{Gres: "gres:gpu:mem:20g"}, 0, Fields{}); o.Gres != "gres:shard:20" || len(h.builds) != 1 {
		t.Fatalf("got %+v, builds %v", o, h.builds)
	}
}
