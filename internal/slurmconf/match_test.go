package slurmconf

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// cluster is a NodeSet of names written as a host list.
func cluster(t testing.TB, list string) *NodeSet {
	t.Helper()
	names, err := ExpandHostlist(list)
	if err != nil {
		t.Fatal(err)
	}
	return NewNodeSet(names)
}

func mustParse(t testing.TB, s string) Hostlist {
	t.Helper()
	h, err := ParseHostlist(s)
	if err != nil {
		t.Fatalf("ParseHostlist(%q): %v", s, err)
	}
	return h
}

// TestCoveredSemantics: what an --exclude or a reservation names on a cluster, read as
// Slurm reads a host list: padding is kept (n[01-10] is n01..n10), several ranges and
// items, text after a range, two ranges in one name; names the cluster lacks are left out.
func TestCoveredSemantics(t *testing.T) {
	s := cluster(t, "n[01-12],n7,gpu[8-11],r[1-2]n[1-2]x,a1b")
	cases := []struct{ list, want string }{
		{"n[01-03]", "n01,n02,n03"},
		{"n[1-3]", ""}, // n1 is not n01
		{"n[001-003]", ""},
		{"n7,n[07]", "n7,n07"},
		{"n[01-02,10-1000000]", "n01,n02,n10,n11,n12"},
		{"n[09-1000000000]", "n09,n10,n11,n12"}, // the cluster's names, not the range's
		{"gpu[9-10],gpu[0-8]", "gpu8,gpu9,gpu10"},
		{"gpu[09-10]", "gpu10"}, // gpu09 is not gpu9
		{"r[1-2]n[2]x", "r1n2x,r2n2x"},
		{"r[2-99999999]n[1-99999999]x", "r2n1x,r2n2x"},
		{"r[1-2]n[1-2]", ""}, // no x after
		{"a[1]b", "a1b"},
		{"a[0-1000000]b", "a1b"},
		{"x[0-1000000],nosuch", ""},
		{" n01 , n[11-12] ", "n01,n11,n12"},
	}
	for _, c := range cases {
		got := strings.Join(s.Covered(mustParse(t, c.list)), ",")
		var want []string
		if c.want != "" {
			want = strings.Split(c.want, ",")
		}
		// Covered is in the cluster's order.
		slices.SortFunc(want, func(a, b string) int { return s.index[a] - s.index[b] })
		if got != strings.Join(want, ",") {
			t.Errorf("Covered(%q) = %q, want %q", c.list, got, strings.Join(want, ","))
		}
	}
}

// TestRequiredSemantics: a --nodelist is read in its order up to the first name the
// cluster does not have, which is named, however far the range goes on.
func TestRequiredSemantics(t *testing.T) {
	s := cluster(t, "x[0-63],n[01-10]")
	cases := []struct{ list, want, missing string }{
		{"x[3-5]", "x3,x4,x5", ""},
		{"x5,x[3-5],x5", "x5,x3,x4", ""},
		{"x[0-1000000]", strings.Join(mustExpand(t, "x[0-63]"), ","), "x64"},
		{"x[1000000-2000000000]", "", "x1000000"},
		{"n[01-03],n4", "n01,n02,n03", "n4"},
		{"n[1-2]", "", "n1"},
		{"x[62-63],y[0-1000000]", "x62,x63", "y0"},
	}
	for _, c := range cases {
		names, missing := s.Required(mustParse(t, c.list))
		if strings.Join(names, ",") != c.want || missing != c.missing {
			t.Errorf("Required(%q) = %q, missing %q; want %q, missing %q", c.list, strings.Join(names, ","), missing, c.want, c.missing)
		}
	}
}

func mustExpand(t testing.TB, s string) []string {
	t.Helper()
	names, err := ExpandHostlist(s)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestParseHostlistBounds: the list's text and ranges are bounded, and what it names is
// counted, not made.
func TestParseHostlistBounds(t *testing.T) {
	h := mustParse(t, "x[0-999999],y[1-2]z[1-3]")
	if h.Size() != 1000000+6 {
		t.Errorf("Size = %d, want 1000006", h.Size())
	}
	if h := mustParse(t, "x[0-9223372036854775806]y[0-9223372036854775806]"); h.Size() != maxSize {
		t.Errorf("Size of a product past int64 = %d, want it to saturate", h.Size())
	}
	for _, bad := range []string{
		strings.Repeat("x", MaxListBytes+1),
		"x[" + strings.Repeat("1,", MaxRanges) + "1]",
		strings.Repeat("a[1]", maxSets+1),
		"x[1-", "x]", "x[a]", "x[3-1]", "x[]", "x[99999999999999999999]",
	} {
		if _, err := ParseHostlist(bad); err == nil {
			t.Errorf("ParseHostlist(%.40q) read", bad)
		} else if len(err.Error()) > 300 {
			t.Errorf("ParseHostlist(%.40q): an error of %d bytes", bad, len(err.Error()))
		}
	}
}

// TestHostlistBoundedCost: a range naming a million or a billion hosts costs, on a
// cluster of 64 nodes, what the cluster does: under 1 MiB for the lot, where expanding
// x[0-999999] alone makes a million strings.
func TestHostlistBoundedCost(t *testing.T) {
	s := cluster(t, "x[0-63]")
	for _, list := range []string{"x[0-999999]", "x[63-1000000000]", "x[0-999999],x[5-2000000]", "r[1-1000000]x[1-1000000]"} {
		per := bytesPerRun(10, func() {
			h, err := ParseHostlist(list)
			if err != nil {
				t.Fatal(err)
			}
			s.Required(h)
			s.Covered(h)
		})
		if per > 1<<20 {
			t.Errorf("%s: %d bytes per read, want under 1 MiB", list, per)
		}
	}
}

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

// FuzzHostlistMatch: on small lists, Required and Covered agree with the names
// ExpandHostlist makes, on a cluster of some of those names and some others.
func FuzzHostlistMatch(f *testing.F) {
	for _, s := range []string{"n[01-10]", "n[1-3,5],gpu[01-02]", "r[1-2]n[1-2]", "a[0-2]0", "n[8-11]", "n[007-9]", "x,y,x", "n[0-1][0-1]", "a]b[1]"} {
		f.Add(s, "n01,n1,n010,gpu2,r1n2,a10,n9,n11,x,n007,n00,a]b1")
	}
	f.Fuzz(func(t *testing.T, list, nodes string) {
		want, err := ExpandHostlistMax(list, 2000)
		if err != nil {
			return
		}
		h, err := ParseHostlist(list)
		if err != nil {
			if !strings.Contains(err.Error(), "bracketed ranges in one name") {
				t.Fatalf("ParseHostlist(%q): %v; ExpandHostlist reads it", list, err)
			}
			return
		}
		if h.Size() != uint64(len(want)) {
			t.Fatalf("Size(%q) = %d, want %d", list, h.Size(), len(want))
		}
		var names []string
		for _, n := range strings.Split(nodes, ",") {
			if n != "" {
				names = append(names, n)
			}
		}
		s := NewNodeSet(names)
		named := map[string]bool{}
		for _, n := range want {
			named[n] = true
		}
		var covered []string
		for _, n := range s.names {
			if named[n] {
				covered = append(covered, n)
			}
		}
		if got := s.Covered(h); !slices.Equal(got, covered) {
			t.Fatalf("Covered(%q) on %q = %q, want %q", list, s.names, got, covered)
		}
		var req []string
		missing := ""
		for _, n := range want {
			if _, ok := s.index[n]; !ok {
				missing = n
				break
			}
			if !slices.Contains(req, n) {
				req = append(req, n)
			}
		}
		got, gotMissing := s.Required(h)
		if !slices.Equal(got, req) || gotMissing != missing {
			t.Fatalf("Required(%q) on %q = %q, %q; want %q, %q", list, s.names, got, gotMissing, req, missing)
		}
	})
}

func ExampleNodeSet_Covered() {
	s := NewNodeSet([]string{"gpu01", "gpu02", "gpu10", "cpu1"})
	h, _ := ParseHostlist("gpu[02-1000000000],cpu[2-9]")
	fmt.Println(s.Covered(h))
	// Output: [gpu02 gpu10]
}
