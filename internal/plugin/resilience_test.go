package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
)

// A loader stuck on a hung filesystem stalls nobody: submits go on with the last state.
func TestSubmitNeverWaitsForTheLoader(t *testing.T) {
	h := newHarness(t, "ReloadInterval = 0\nLogLevel = error\n")
	hung := make(chan struct{})
	defer close(hung)
	builds := 0
	p := New(filepath.Join(h.dir, "gpumem.conf"), "job_submit/gpumem", &lockedSink{}, func(cfg config.Config, inv inventory.Cluster, d []string) (Core, error) {
		builds++ // the loader's goroutine only
		if builds > 1 {
			<-hung // as a read from a dead NFS server would
			return nil, errors.New("unreachable")
		}
		return &fakeCore{admit: shardCore}, nil
	})
	defer p.Close()
	h.writeInventory(2) // the loader takes it up and hangs in it
	time.Sleep(3 * minLoaderPeriod)
	done := make(chan Verdict)
	go func() {
		var v Verdict
		for range 1000 {
			v = p.Submit(Fields{PerNode: "gres:gpu:mem:20g"})
		}
		done <- v
	}()
	select {
	case v := <-done:
		if v.Fields.PerNode != "gres:shard:20" || v.Refusal != "" {
			t.Errorf("with the loader hung: %+v; want the last state's answer", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Submit blocked behind a hung loader")
	}
}

// Without any usable inventory a gpu:mem job is refused with "try again"; once the
// inventory comes back, the next job is translated: nothing stays stuck.
func TestNoInventoryThenBack(t *testing.T) {
	h := newHarness(t, "OnError = open\n")
	h.writeRaw([]byte(`{"nodes": [`))
	p := h.plugin()
	v := p.tickSubmit(Fields{PerNode: "gres:gpu:mem:20g"})
	if !strings.Contains(v.Refusal, "please try again later") {
		t.Fatalf("broken inventory, OnError=open: %+v; want a try-again refusal, never the job untranslated", v)
	}
	// A job with "mem" in its GRES but no gpu:mem is not gpumem's: never refused.
	for _, other := range []string{"gres:gpu:memory:2", "gres/GPU:MEM:1G"} {
		if v := p.tickSubmit(Fields{PerNode: other}); v != (Verdict{Fields: Fields{PerNode: other}}) {
			t.Fatalf("broken inventory, %s: %+v; want the job untouched", other, v)
		}
	}
	h.writeInventory(1)
	if v := p.tickSubmit(Fields{PerNode: "gres:gpu:mem:20g"}); v.Fields.PerNode != "gres:shard:20" {
		t.Fatalf("after the inventory came back: %+v", v)
	}
}

// A broken node file in a directory costs that node only.
func TestBrokenNodeFileCostsThatNode(t *testing.T) {
	h := newHarness(t, "")
	dir := filepath.Join(h.dir, "gpumem.d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.write("gpumem.conf", "InventoryPath = "+dir+"\nReloadInterval = 0\n")
	for name, body := range map[string][]byte{"n1.json": nodeFile("n1", 1), "n2.json": []byte(`{"nodes": [`), "n3.json": nodeFile("n3", 1)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := h.plugin()
	if v := p.tickSubmit(Fields{PerNode: "gres:gpu:mem:20g"}); v.Fields.PerNode != "gres:shard:20" {
		t.Fatalf("one broken node file stopped admission: %+v", v)
	}
	if len(h.builds) != 1 || h.builds[0] != 2 || !h.sink.has("n2.json: inventory: line 1, column 11: unexpected end of JSON input; skipped, the rest is used") {
		t.Fatalf("builds %v, log %v; want the two good nodes and n2.json named", h.builds, h.sink.errors)
	}
}

// A broken gpumem.conf is the administrator's to read: a client (whose log is the user's
// terminal) says nothing about it to a job without GPU memory, and for a gpu:mem job
// leaves the options to slurmctld (OnError=open) or stops with the reason (closed).
func TestClientBrokenConfig(t *testing.T) {
	for _, onError := range []string{"open", "closed"} {
		h := newHarness(t, "OnError = "+onError+"\nLogLevel = info\nShardUnit = lots\n")
		p := NewClient(filepath.Join(h.dir, "gpumem.conf"), "cli_filter/gpumem", h.sink, h.newCore)
		if o, refusal := p.SubmitOptions(Options{Gres: "gres:gpu:1"}, 0, Fields{}); refusal != "" || o.Gres != "gres:gpu:1" {
			t.Errorf("%s: a job without gpu:mem: %+v, %q", onError, o, refusal)
		}
		if len(h.sink.errors) > 0 || len(h.sink.infos) > 0 {
			t.Errorf("%s: a user of a job without GPU memory was shown %v %v", onError, h.sink.errors, h.sink.infos)
		}
		o, refusal := p.SubmitOptions(Options{Gres: "gres:gpu:mem:20g"}, 0, Fields{})
		switch {
		case onError == "open" && (refusal != "" || o.Gres != "gres:gpu:mem:20g"):
			t.Errorf("open: %+v, %q; want the options left to slurmctld", o, refusal)
		case onError == "closed" && !strings.Contains(refusal, "ShardUnit"):
			t.Errorf("closed: %q; want a refusal naming the broken key", refusal)
		}
		if len(h.sink.errors) > 0 {
			t.Errorf("%s: errors on the user's terminal: %v", onError, h.sink.errors)
		}
	}
}

// slurmctld keeps its last good configuration when gpumem.conf breaks, and says so once.
func TestBrokenConfigKeepsTheLastGood(t *testing.T) {
	h := newHarness(t, "ReloadInterval = 0\nShardUnit = 2g\n")
	p := h.plugin()
	h.write("gpumem.conf", "InventoryPath = "+h.inv+"\nShardUnit = lots\nReloadInterval = 0\n")
	p.reload()
	p.reload()
	if got := p.Config().ShardUnitMiB; got != 2048 {
		t.Errorf("shard unit %d MiB after gpumem.conf broke; want the 2048 loaded before", got)
	}
	n := 0
	for _, e := range h.sink.errors {
		if strings.Contains(e, "keeping the configuration loaded before") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("logged %d times; want once: %v", n, h.sink.errors)
	}
}

// A login node of a configless cluster has none of gpumem's files: no gpumem.conf (so
// OnError is open), no inventory, no slurm.conf. A new gpu:mem allocation goes to
// slurmctld untranslated, for job_submit to translate, and the user sees nothing.
func TestClientWithoutFilesLeavesTheRequestToSlurmctld(t *testing.T) {
	dir := t.TempDir()
	sink := &logSink{}
	p := NewClient(filepath.Join(dir, "gpumem.conf"), "cli_filter/gpumem", sink, AdmitCore)
	if p.Config().OnError != "open" || p.Config().InventoryPath != "/etc/slurm/gpumem.d" {
		t.Fatalf("defaults: %+v", p.Config())
	}
	// Point the defaults somewhere empty, as a login node without /etc/slurm has them.
	os.WriteFile(filepath.Join(dir, "gpumem.conf"), []byte("InventoryPath = "+dir+"/gpumem.d\nSlurmConf = "+dir+"/slurm.conf\n"), 0o644)
	o, refusal := p.SubmitOptions(Options{Gres: "gres:gpu:mem:20g"}, 0, Fields{})
	if refusal != "" || o.Gres != "gres:gpu:mem:20g" {
		t.Errorf("%+v, %q; want the options left to slurmctld", o, refusal)
	}
	if len(sink.errors) > 0 { // a client's info and debug lines wait for -v
		t.Errorf("the user's terminal shows %v", sink.errors)
	}
}
