package plugin

import (
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/admit"
)

// TestVerdictFreshUntilTheNextInventoryLook: a verdict from the core may be reused until
// the source would look at the inventory again, and never past it; errors, refusals (each
// is counted), and a log level that wants a line per job, are decided again every time.
func TestVerdictFreshUntilTheNextInventoryLook(t *testing.T) {
	h := newHarness(t, "ReloadInterval = 10s\nLogLevel = info\n")
	p := h.plugin() // the inventory is looked at now
	job := Fields{PerNode: "gres:gpu:mem:20g"}
	if v := p.tickSubmit(job); v.Fresh != 10*time.Second {
		t.Errorf("rewrite right after a look: Fresh %v; want 10s", v.Fresh)
	}
	h.clock = h.clock.Add(4 * time.Second)
	if v := p.tickSubmit(Fields{PerNode: "gres:gpu:mem:abc"}); v.Refusal == "" || v.Fresh != 0 {
		t.Errorf("refusal 4s later: %+v; want a refusal never reused (each refused submission is counted)", v)
	}
	h.admit = func(j admit.Job) (admit.Decision, error) { return admit.Decision{Job: j}, nil }
	if v := p.tickSubmit(job); v.Fresh != 6*time.Second {
		t.Errorf("unchanged job 4s later: Fresh %v; want 6s", v.Fresh)
	}
	// At the next look the inventory is read again and the clock starts over.
	h.clock = h.clock.Add(6 * time.Second)
	if v := p.tickSubmit(job); v.Fresh != 10*time.Second {
		t.Errorf("at the next look: Fresh %v; want 10s", v.Fresh)
	}
	if v := p.tickSubmit(Fields{PerNode: "gres:gpu:2"}); v.Fresh != 0 {
		t.Errorf("a job without gpu:mem: Fresh %v; the shim filters those itself", v.Fresh)
	}

	h.admit = func(admit.Job) (admit.Decision, error) { panic("boom") }
	if v := p.tickSubmit(job); v.Fresh != 0 {
		t.Errorf("after an internal error: Fresh %v; want 0", v.Fresh)
	}
}

func TestVerdictNotReusedWhenEveryJobIsLogged(t *testing.T) {
	for _, level := range []string{"verbose", "debug"} {
		h := newHarness(t, "ReloadInterval = 10s\nLogLevel = "+level+"\n")
		if v := h.plugin().tickSubmit(Fields{PerNode: "gres:gpu:mem:20g"}); v.Refusal != "" || v.Fresh != 0 {
			t.Errorf("LogLevel=%s: %+v; want a rewrite with Fresh 0", level, v)
		}
	}
}

func TestNoInventoryIsNeverFresh(t *testing.T) {
	h := newHarness(t, "ReloadInterval = 10s\n")
	h.writeRaw([]byte(`{"nodes": [`))
	if v := h.plugin().tickSubmit(Fields{PerNode: "gres:gpu:mem:20g"}); v.Fresh != 0 {
		t.Errorf("no usable inventory: Fresh %v; want 0", v.Fresh)
	}
}
