//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// nodeState is what scontrol says of a lab node: its State= and its Reason= (which
// runs to the end of the one-line form).
func nodeState(t *testing.T, node string) (state, reason string) {
	t.Helper()
	out := strings.TrimSpace(ok(t, "scontrol", "show", "node", node, "-o"))
	if m := fieldRE("State").FindStringSubmatch(out); m != nil {
		state = m[1]
	}
	if _, r, found := strings.Cut(out, " Reason="); found {
		reason = r
	}
	return state, reason
}

// TestGpumemdDrainsOnCriticalXID: a critical XID on one of n3's GPUs makes gpumemd
// drain n3 through the lab's real scontrol, with a reason saying it was gpumem and
// why; once the XID hold has passed the node is healthy and gpumemd resumes it.
func TestGpumemdDrainsOnCriticalXID(t *testing.T) {
	clean(t)
	const node = "n3"
	t.Cleanup(func() {
		if st, _ := nodeState(t, node); strings.Contains(st, "DRAIN") {
			ok(t, "scontrol", "update", "nodename="+node, "state=resume")
		}
	})
	if st, reason := nodeState(t, node); strings.Contains(st, "DRAIN") {
		t.Fatalf("%s drained before the test: %s", node, reason)
	}
	s := newSidecar(t, node)
	s.start(t, "--drain", "--resume", "--xid-hold", "4s")
	s.gpus(t)[1]["xids"] = []any{map[string]any{"xid": 79}} // fallen off the bus
	s.write(t)

	var st, reason string
	if !eventually(15*time.Second, func() bool {
		st, reason = nodeState(t, node)
		return strings.Contains(st, "DRAIN")
	}) {
		t.Fatalf("%s not drained within 15s of XID 79: State=%s\n%s", node, st, s.log())
	}
	t.Logf("%s: State=%s Reason=%s", node, st, reason)
	if !strings.HasPrefix(reason, "gpumem: ") || !strings.Contains(reason, "79") {
		t.Errorf("drain reason %q; want one starting \"gpumem: \" that names XID 79", reason)
	}
	if m := s.metrics(t); !strings.Contains(m, "gpumem_sidecar_node_drained 1") ||
		!strings.Contains(m, `gpumem_gpu_xid_errors_total{Hostname="`+node+`",gpu="1",xid="79"}`) {
		t.Errorf("/metrics does not show the drain and the XID:\n%s", m)
	}
	// Slurm pings a resumed node before it counts as responding again; the next test
	// should find it ready.
	if !eventually(20*time.Second, func() bool {
		st, reason = nodeState(t, node)
		return !strings.Contains(st, "DRAIN") && !strings.Contains(st, "NOT_RESPONDING")
	}) {
		t.Fatalf("%s still %s (%s) 20s after a 4s XID hold\n%s", node, st, reason, s.log())
	}
	t.Logf("%s resumed: State=%s", node, st)
}
