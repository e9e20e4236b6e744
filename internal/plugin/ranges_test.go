package plugin

import (
	"runtime"
	"strings"
	"testing"
)

// bytesPerRun is what f allocates per call, on average over runs calls.
func bytesPerRun(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestHostRangesBounded: job_submit and job_modify decide a gpu:mem job whose -w and
// -x name a million hosts, on 64 nodes, within 1 MiB, and refuse it (naming the first
// node the cluster lacks) in at most 4 KiB; no log line passes 4 KiB either.
func TestHostRangesBounded(t *testing.T) {
	sink := &lineSink{}
	p := rangePlugin(t)
	p.log.sink = sink
	cur := Fields{PerNode: "gres:shard:20", Partition: "gpu"}
	const n = 1000000
	cases := []struct {
		name, says string
		run        func() Verdict
	}{
		{"submit -w", "node x64 has no GPU gpumem knows", func() Verdict {
			return p.Submit(Fields{PerNode: "gres:gpu:mem:20g", ReqNodes: reqRange(n)})
		}},
		{"submit -x", "", func() Verdict { return p.Submit(Fields{PerNode: "gres:gpu:mem:20g", ExcNodes: excRange(n)}) }},
		{"modify -w -x", "--nodelist=x0,x1,", func() Verdict {
			return p.Modify(Fields{ReqNodes: reqRange(n), ExcNodes: excRange(n)}, &cur, false, Read)
		}},
		{"modify size -w -x", "node x63 is both required (--nodelist) and excluded", func() Verdict {
			return p.Modify(Fields{PerNode: "gres:gpu:mem:30g", ReqNodes: reqRange(n), ExcNodes: excRange(n)}, &cur, false, Read)
		}},
	}
	for _, c := range cases {
		v := c.run()
		if c.says == "" && v.Refusal != "" || !strings.Contains(v.Refusal, c.says) {
			t.Errorf("%s: refusal %q, want it to say %q", c.name, v.Refusal, c.says)
		}
		if len(v.Refusal) > 4<<10 {
			t.Errorf("%s: a refusal of %d bytes, want at most 4 KiB", c.name, len(v.Refusal))
		}
		if per := bytesPerRun(3, func() { c.run() }); per > 1<<20 {
			t.Errorf("%s: %d bytes per decision, want under 1 MiB", c.name, per)
		}
	}
	if sink.longest == 0 || sink.longest > 4<<10 {
		t.Errorf("longest log line %d bytes, want some and at most 4 KiB", sink.longest)
	}
}

// lineSink keeps the length of the longest line.
type lineSink struct{ longest int }

func (s *lineSink) Error(m string) { s.longest = max(s.longest, len(m)) }
func (s *lineSink) Info(m string)  { s.longest = max(s.longest, len(m)) }
func (s *lineSink) Debug(m string) { s.longest = max(s.longest, len(m)) }

// TestReservationRangeBounded: a reservation's host list is read against the
// inventory's nodes: one naming a million hosts narrows to those the inventory has,
// within 1 MiB, and a refusal quoting it stays short.
func TestReservationRangeBounded(t *testing.T) {
	p := rangePlugin(t)
	list := "x[62-1000061]"
	p.resvSrc = func() (map[string]string, error) { return map[string]string{"big": list}, nil }
	p.lookAtReservations()
	if per := bytesPerRun(3, func() { _, _ = p.coreWithin(p.st.Load(), list) }); per > 1<<20 {
		t.Errorf("%d bytes per narrowing, want under 1 MiB", per)
	}
	if v := p.Submit(Fields{PerNode: "gres:gpu:mem:20g", Reservation: "big", MinNodes: 2}); v.Refusal != "" {
		t.Errorf("2 nodes of the reservation's x62, x63: refused %q", v.Refusal)
	}
	v := p.Submit(Fields{PerNode: "gres:gpu:mem:20g", Reservation: "big", MinNodes: 3})
	if !strings.Contains(v.Refusal, "reservation big: x[62-1000061]") {
		t.Errorf("3 nodes of 2: %q, want a refusal naming the reservation's nodes", v.Refusal)
	}
}
