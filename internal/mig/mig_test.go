package mig

import (
	"strings"
	"testing"
)

func mustModel(t *testing.T, name string) Model {
	t.Helper()
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCatalogIsConsistent(t *testing.T) {
	for _, m := range Catalog() {
		if len(m.Profiles) != 7 {
			t.Errorf("%s: %d profiles", m.Key, len(m.Profiles))
		}
		for _, p := range m.Profiles {
			if p.MiB <= 0 || p.MiB > m.MemoryMiB || p.MiB > m.MemoryMiB*int64(p.Mem)/Slots {
				t.Errorf("%s %s: %d MiB does not fit %d/%d of %d MiB", m.Key, p.Name, p.MiB, p.Mem, Slots, m.MemoryMiB)
			}
			// Every instance a profile allows must fit one GPU at once.
			var l Layout
			for _, s := range p.Starts[:p.Max] {
				l = append(l, Placement{p.Name, s})
			}
			if err := m.Validate(l); err != nil {
				t.Errorf("%s: %d x %s should be valid: %v", m.Key, p.Max, p.Name, err)
			}
		}
		if _, err := Lookup(m.Products[0]); err != nil {
			t.Errorf("lookup by product %q: %v", m.Products[0], err)
		}
	}
	if m, err := Lookup("Mock NVIDIA A100-SXM4-40GB"); err != nil || m.Key != "a100-40gb" {
		t.Errorf("lookup of a fake NVML's product: %v, %v", m.Key, err)
	}
	if _, err := Lookup("H100-80GB"); err != nil {
		t.Errorf("lookup is case-insensitive: %v", err)
	}
	if _, err := Lookup("v100"); err == nil || err.Error() != `mig: unknown GPU model "v100"; known: a100-40gb, a100-80gb, h100-80gb, h100-94gb, h200-141gb (or their NVML product names)` {
		t.Errorf("unknown model error: %v", err)
	}
}

func TestSmallestByRealMiB(t *testing.T) {
	cases := []struct {
		model string
		mib   int64
		want  string
	}{
		{"h100-80gb", 20 * 1024, "3g.40gb"}, // 2g.20gb has 20096 MiB, less than 20 GiB
		{"h100-80gb", 20096, "1g.20gb"},     // same memory as 2g.20gb, fewer slices
		{"h100-80gb", 9 * 1024, "1g.10gb"},  // not the +me variant
		{"h100-80gb", 40449, "7g.80gb"},
		{"a100-40gb", 5 * 1024, "1g.10gb"}, // 1g.5gb has 4864 MiB
		{"a100-40gb", 4864, "1g.5gb"},
		{"h200-141gb", 69 * 1024, "3g.71gb"}, // derived 71168 MiB: 70 GiB would need 7g.141gb
		{"h200-141gb", 70 * 1024, "7g.141gb"},
		{"h100-94gb", 12 * 1024, "1g.24gb"},
	}
	for _, c := range cases {
		p, err := mustModel(t, c.model).Smallest(c.mib)
		if err != nil || p.Name != c.want {
			t.Errorf("%s.Smallest(%d) = %s, %v; want %s", c.model, c.mib, p.Name, err, c.want)
		}
	}
	_, err := mustModel(t, "h100-80gb").Smallest(100 * 1024)
	if err == nil || err.Error() != "mig: no MIG profile of h100-80gb holds 102400 MiB; the largest, 7g.80gb, has 81152 MiB" {
		t.Errorf("too big: %v", err)
	}
}

func TestValidate(t *testing.T) {
	h := mustModel(t, "h100-80gb")
	valid := []string{"", "4g.40gb@0,3g.40gb@4", "3g.40gb@4,2g.20gb@0,2g.20gb@2", "1g.10gb@0,1g.10gb@1,2g.20gb@2,3g.40gb@4",
		"7g.80gb@0", "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb@6", "1g.20gb@0,1g.20gb@2,1g.20gb@4,1g.20gb@6"}
	for _, s := range valid {
		l, err := ParseLayout(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Validate(l); err != nil {
			t.Errorf("Validate(%s): %v", s, err)
		}
		if l.String() != s {
			t.Errorf("String(ParseLayout(%q)) = %q", s, l.String())
		}
	}
	invalid := []struct{ layout, err string }{
		{"3g.40gb@2", "mig: h100-80gb: 3g.40gb cannot start at slot 2; valid starts: 0, 4"},
		{"4g.40gb@0,3g.40gb@0", "mig: h100-80gb: 3g.40gb@0 overlaps 4g.40gb@0 on memory slot 0"},
		{"7g.80gb@0,1g.10gb@6", "mig: h100-80gb: 1g.10gb@6 overlaps 7g.80gb@0 on memory slot 6"},
		{"1g.20gb@0,1g.20gb@2,1g.20gb@4,2g.20gb@6", "mig: h100-80gb: 2g.20gb cannot start at slot 6; valid starts: 0, 2, 4"},
		{"4g.40gb@0,2g.20gb@4,2g.20gb@6", "mig: h100-80gb: 2g.20gb cannot start at slot 6; valid starts: 0, 2, 4"},
		{"1g.10gb+me@0,1g.10gb+me@1", "mig: h100-80gb: more than 1 instance(s) of 1g.10gb+me"},
		{"3g.20gb@0", `mig: h100-80gb has no profile "3g.20gb"; it has 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb`},
	}
	for _, c := range invalid {
		l, _ := ParseLayout(c.layout)
		if err := h.Validate(l); err == nil || err.Error() != c.err {
			t.Errorf("Validate(%s)\n got %v\nwant %s", c.layout, err, c.err)
		}
	}
	// The catalog's slots already keep slices within 7; a model whose don't is caught.
	wide := Model{Key: "wide", Profiles: []Profile{{Name: "4g.1gb", Slices: 4, Mem: 1, Max: 7, Starts: []int{0, 1}}}}
	l, _ := ParseLayout("4g.1gb@0,4g.1gb@1")
	if err := wide.Validate(l); err == nil || err.Error() != "mig: wide: layout 4g.1gb@0,4g.1gb@1 uses 8 compute slices; a GPU has 7" {
		t.Errorf("slice limit: %v", err)
	}
	for _, s := range []string{"3g.40gb", "@4", "3g.40gb@x", "3g.40gb@-1"} {
		if _, err := ParseLayout(s); err == nil || !strings.Contains(err.Error(), "want PROFILE@START, e.g. 3g.40gb@4") {
			t.Errorf("ParseLayout(%q) = %v", s, err)
		}
	}
}

func TestPlan(t *testing.T) {
	h := mustModel(t, "h100-80gb")
	gib := int64(1024)
	got, err := h.Plan([]int64{20 * gib, 9 * gib, 9 * gib, 19 * gib, 30 * gib, 70 * gib})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"7g.80gb@0", "3g.40gb@0,3g.40gb@4", "1g.20gb@0,1g.10gb@2,1g.10gb@3"}
	if len(got) != len(want) {
		t.Fatalf("Plan = %v, want %v", got, want)
	}
	for i, l := range got {
		if l.String() != want[i] {
			t.Errorf("GPU %d: %s, want %s", i, l, want[i])
		}
		if err := h.Validate(l); err != nil {
			t.Errorf("GPU %d: planned an invalid layout: %v", i, err)
		}
	}
	if _, err := h.Plan([]int64{100 * gib}); err == nil {
		t.Error("Plan accepted a request no profile holds")
	}
}
