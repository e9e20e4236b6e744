package plugin

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/refusalcount"
)

// TestRefusalsCountedByClassAndWrittenByTheLoader: the real core refuses a size no GPU
// holds (no_fit) and a size it cannot read (invalid_request); the submit path only
// counts, the loader's turn writes the counts, and a refusal is never memoised by the
// shim (Fresh 0), so each refused submission is counted.
func TestRefusalsCountedByClassAndWrittenByTheLoader(t *testing.T) {
	h := newHarness(t, "ReloadInterval = 10s\nLogLevel = info\n")
	p := newPlugin(filepath.Join(h.dir, "gpumem.conf"), "job_submit/gpumem", h.sink, AdmitCore, h.now, false)
	p.safeReload()
	path := filepath.Join(h.dir, "refusals.json")
	s, err := refusalcount.Read(path)
	if err != nil {
		t.Fatalf("after the first look: %v; want the counts file, all zero", err)
	}
	zero := map[string]uint64{"invalid_request": 0, "no_fit": 0, "gpumem_unavailable": 0}
	if !reflect.DeepEqual(s.Refused, zero) || !s.Since.Equal(h.clock) || s.Version != refusalcount.Version {
		t.Fatalf("first counts file %+v; want version %d, all zero since %s", s, refusalcount.Version, h.clock)
	}
	for _, f := range []Fields{
		{PerNode: "gres:gpu:mem:500g"}, {PerNode: "gres:gpu:mem:500g"}, // no H100 holds 500 GiB
		{PerNode: "gres:gpu:mem:abc"}, // not a size
		{PerNode: "gres:gpu:mem:20g"}, // admitted: not counted
		{PerNode: "gres:gpu:1"},       // not gpumem's: not counted
	} {
		v := p.Submit(f)
		if v.Refusal != "" && v.Fresh != 0 {
			t.Errorf("%+v refused with Fresh %v; want 0, so the shim asks again and it is counted", f, v.Fresh)
		}
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"no_fit":0`) {
		t.Fatalf("counts file rewritten on the submit path: %s", b)
	}
	p.safeReload()
	if s, err = refusalcount.Read(path); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"invalid_request": 1, "no_fit": 2, "gpumem_unavailable": 0}
	if !reflect.DeepEqual(s.Refused, want) {
		t.Errorf("counts after two too big and one unreadable: %v; want %v", s.Refused, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("counts file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

// TestRefusalWhenGpumemCannotDecide is gpumem_unavailable; the client (cli_filter)
// counts nothing, job_modify's changes are not submissions, and a counts file that
// cannot be written is logged once and costs nothing else.
func TestRefusalWhenGpumemCannotDecide(t *testing.T) {
	h := newHarness(t, "")
	blocker := filepath.Join(h.dir, "file")
	h.write("file", "")
	h.write("gpumem.conf", "InventoryPath = "+h.dir+"/none\nReloadInterval = 0\nRefusalCounts = "+blocker+"/refusals.json\n")
	p := newPlugin(filepath.Join(h.dir, "gpumem.conf"), "job_submit/gpumem", h.sink, AdmitCore, h.now, false)
	p.safeReload()
	if v := p.Submit(Fields{PerNode: "gres:gpu:mem:20g"}); !strings.Contains(v.Refusal, "try again") {
		t.Fatalf("without an inventory: %+v; want a try-again refusal", v)
	}
	if v := p.Modify(Fields{PerNode: "gres:gpu:mem:20g"}, nil, false, NoLayout); v.Refusal == "" {
		t.Errorf("a new gpu:mem for a job that cannot be read was accepted: %+v", v)
	}
	c := NewClient(filepath.Join(h.dir, "gpumem.conf"), "cli_filter/gpumem", h.sink, AdmitCore)
	c.Submit(Fields{PerNode: "gres:gpu:mem:abc"})
	want := map[string]uint64{"invalid_request": 0, "no_fit": 0, "gpumem_unavailable": 1}
	if got := p.refused.Counts(); !reflect.DeepEqual(got, want) {
		t.Errorf("counts %v; want %v", got, want)
	}
	if got := c.refused.Counts(); got["invalid_request"] != 0 {
		t.Errorf("the client counted %v; want nothing", got)
	}
	p.safeReload()
	p.safeReload()
	n := 0
	for _, m := range h.sink.errors {
		if strings.Contains(m, "refusal counts "+blocker) && strings.Contains(m, "RefusalCounts") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d log lines about the counts file that cannot be written (%v); want 1", n, h.sink.errors)
	}
}
