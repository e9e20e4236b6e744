package slurmgres

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// forms are the GRES strings the labs print and take, by release: tres_per_node and
// squeue's %b (job_submit's rewrite), `scontrol -d show job` per-GPU detail, and a
// node's Gres= from slurm.conf or `scontrol show node`. 26.05 prints as 24.11 does.
var forms = []struct {
	release, s string
	want       Item
}{
	{"22.05", "gres:shard:20", Item{Prefix: Colon, Name: Shard, Count: 20, Counted: true}},
	{"22.05", "gres:shard:10", Item{Prefix: Colon, Name: Shard, Count: 10, Counted: true}},
	{"22.05", "gres:gpu:h100:2", Item{Prefix: Colon, Name: GPU, Type: "h100", Count: 2, Counted: true}},
	{"22.05", "gres:gpu:3g.40gb:1", Item{Prefix: Colon, Name: GPU, Type: "3g.40gb", Count: 1, Counted: true}},
	{"22.05", "gres:gpu:2", Item{Prefix: Colon, Name: GPU, Count: 2, Counted: true}},
	{"22.05", "gres:gpu", Item{Prefix: Colon, Name: GPU}},
	{"22.05", "gres:gpu:h100", Item{Prefix: Colon, Name: GPU, Type: "h100"}},
	{"22.05", "gres:shard:h100_g1:20", Item{Prefix: Colon, Name: Shard, Type: "h100_g1", Count: 20, Counted: true}},
	{"22.05", "shard:20(IDX:0)", Item{Name: Shard, Count: 20, Counted: true, Detail: "IDX:0"}},
	{"22.05", "shard:h100:30(IDX:1)", Item{Name: Shard, Type: "h100", Count: 30, Counted: true, Detail: "IDX:1"}},
	{"22.05", "shard:h100_g0:24(IDX:0)", Item{Name: Shard, Type: "h100_g0", Count: 24, Counted: true, Detail: "IDX:0"}},
	{"22.05", "shard:h100_g1:0(IDX:)", Item{Name: Shard, Type: "h100_g1", Count: 0, Counted: true, Detail: "IDX:"}},
	{"22.05", "gpu:h100:1(IDX:1)", Item{Name: GPU, Type: "h100", Count: 1, Counted: true, Detail: "IDX:1"}},
	{"22.05", "gpu:3g.20gb:1(IDX:0)", Item{Name: GPU, Type: "3g.20gb", Count: 1, Counted: true, Detail: "IDX:0"}},
	{"22.05", "gpu:h100:2(IDX:0-1)", Item{Name: GPU, Type: "h100", Count: 2, Counted: true, Detail: "IDX:0-1"}},
	{"22.05", "gpu:h100:1(IDX:N/A)", Item{Name: GPU, Type: "h100", Count: 1, Counted: true, Detail: "IDX:N/A"}},
	{"24.11", "gres/shard:20", Item{Prefix: Slash, Name: Shard, Count: 20, Counted: true}},
	{"24.11", "gres/gpu:a100:2", Item{Prefix: Slash, Name: GPU, Type: "a100", Count: 2, Counted: true}},
	{"24.11", "gres/gpu:3g.20gb:2", Item{Prefix: Slash, Name: GPU, Type: "3g.20gb", Count: 2, Counted: true}},
	{"24.11", "gres/shard:l4_g0:4", Item{Prefix: Slash, Name: Shard, Type: "l4_g0", Count: 4, Counted: true}},
	{"24.11", "gres/gpu:1", Item{Prefix: Slash, Name: GPU, Count: 1, Counted: true}},
	{"24.11", "shard:30(23/80,7/80)", Item{Name: Shard, Count: 30, Counted: true, Detail: "23/80,7/80"}},
	{"24.11", "shard:80(80/80)", Item{Name: Shard, Count: 80, Counted: true, Detail: "80/80"}},
	{"24.11", "shard:0(0/22)", Item{Name: Shard, Count: 0, Counted: true, Detail: "0/22"}},
	{"24.11", "gres/shard:20(20/80,0/80)", Item{Prefix: Slash, Name: Shard, Count: 20, Counted: true, Detail: "20/80,0/80"}},
	{"24.11", "shard:l4_g0:7(7/22,0/22,0/22,0/22)", Item{Name: Shard, Type: "l4_g0", Count: 7, Counted: true, Detail: "7/22,0/22,0/22,0/22"}},
	{"24.11", "gres/shard:l4_g0:7(7/22,0/22)", Item{Prefix: Slash, Name: Shard, Type: "l4_g0", Count: 7, Counted: true, Detail: "7/22,0/22"}},
	{"26.05", "gres/shard:a100:20", Item{Prefix: Slash, Name: Shard, Type: "a100", Count: 20, Counted: true}},
	{"26.05", "gres/gpu:1g.5gb:1", Item{Prefix: Slash, Name: GPU, Type: "1g.5gb", Count: 1, Counted: true}},
	{"26.05", "shard:a100:20", Item{Name: Shard, Type: "a100", Count: 20, Counted: true}},
	// A node's Gres=, with and without Slurm's socket suffix.
	{"node", "gpu:h100:2(S:0-15)", Item{Name: GPU, Type: "h100", Count: 2, Counted: true, Detail: "S:0-15"}},
	{"node", "shard:h100:160(S:0-15)", Item{Name: Shard, Type: "h100", Count: 160, Counted: true, Detail: "S:0-15"}},
	{"node", "gpu:3g.20gb:2(S:0)", Item{Name: GPU, Type: "3g.20gb", Count: 2, Counted: true, Detail: "S:0"}},
	{"node", "shard:158", Item{Name: Shard, Count: 158, Counted: true}},
	{"node", "gpu:h100_g0:1", Item{Name: GPU, Type: "h100_g0", Count: 1, Counted: true}},
	{"node", "mps:100", Item{Name: "mps", Count: 100, Counted: true}},
	// cli_filter and users: --gres as typed, gpumem's own gpu:mem among them.
	{"user", "gpu:mem:20", Item{Name: GPU, Type: "mem", Count: 20, Counted: true}},
	{"user", "shard:3", Item{Name: Shard, Count: 3, Counted: true}},
}

func TestFormsRoundTrip(t *testing.T) {
	for _, f := range forms {
		got, err := Parse(f.s)
		if err != nil || got != f.want {
			t.Errorf("%s %q: %+v, %v; want %+v", f.release, f.s, got, err, f.want)
			continue
		}
		if s := got.String(); s != f.s {
			t.Errorf("%s %q written back as %q", f.release, f.s, s)
		}
	}
}

func TestRefusals(t *testing.T) {
	for s, why := range map[string]string{
		"":                              "want a name",
		"gres:":                         "want a name",
		":20":                           "want a name",
		"(null)":                        "want a name",
		"gpu:":                          "empty type or count",
		"gpu::2":                        "malformed type",
		"gpu:h100:":                     "not a whole number",
		"gpu:h100:2:3":                  "too many ':' parts",
		"gpu:mem:20g":                   "not a whole number",
		"gpu:h100:+2":                   "not a whole number",
		"gpu:h100:-2":                   "not a whole number",
		"gpu:2:3":                       "malformed type", // a type of digits would read back as a count
		"gpu:h 100:2":                   "malformed type",
		"shard:1,gpu:2":                 "malformed type",
		"shard:20(IDX:0":                "(DETAIL)",
		"shard:20(IDX:0)x":              "(DETAIL)",
		"shard:20(a(b))":                "(DETAIL)",
		"shard:20)":                     "malformed type",
		"gpu=2":                         "want a name",
		"gres/gpu:99999999999999999999": "count past",
	} {
		it, err := Parse(s)
		var e *Error
		if err == nil || !errors.As(err, &e) || !strings.Contains(err.Error(), why) {
			t.Errorf("Parse(%q) = %+v, %v; want an error saying %q", s, it, err, why)
		}
	}
	it, err := Parse("gres/gpu:h100:99999999999999999999")
	if !errors.Is(err, strconv.ErrRange) || it.Name != GPU || it.Type != "h100" || it.Count != -1 {
		t.Errorf("a count past int64: %+v, %v; want the item with Count -1 and strconv.ErrRange", it, err)
	}
}

func TestNameAndPrefix(t *testing.T) {
	for s, want := range map[string]string{
		"gres/shard:a100:20(IDX:0)": "shard", "gres:gpu": "gpu", "gpu(IDX:0)": "gpu", "": "", "mps:100": "mps",
	} {
		if got := Name(s); got != want {
			t.Errorf("Name(%q) = %q, want %q", s, got, want)
		}
	}
	for s, want := range map[string][2]string{
		"gres:shard:20": {"shard:20", Colon}, "gres/gpu:2": {"gpu:2", Slash}, "gpu:2": {"gpu:2", ""}, "gres": {"gres", ""},
	} {
		if body, prefix := CutPrefix(s); body != want[0] || prefix != want[1] {
			t.Errorf("CutPrefix(%q) = %q, %q; want %q, %q", s, body, prefix, want[0], want[1])
		}
	}
	if got := StripAll("gres:shard:2,gres/gpu:h100:1,mps:10"); got != "shard:2,gpu:h100:1,mps:10" {
		t.Errorf("StripAll = %q", got)
	}
}

func TestSplitKeepsDetails(t *testing.T) {
	for list, want := range map[string][]string{
		"shard:l4_g0:7(7/22,0/22),shard:l4_g1:0(0/22,0/22)": {"shard:l4_g0:7(7/22,0/22)", "shard:l4_g1:0(0/22,0/22)"},
		"gres:gpu:h100:2,gres:shard:3":                      {"gres:gpu:h100:2", "gres:shard:3"},
		"gpu:h100:2(S:0-15),shard:h100:160(S:0-15)":         {"gpu:h100:2(S:0-15)", "shard:h100:160(S:0-15)"},
		"a,,b":     {"a", "", "b"},
		"x),y":     {"x)", "y"},
		"":         nil,
		"shard:20": {"shard:20"},
	} {
		if got := Split(list); !reflect.DeepEqual(got, want) {
			t.Errorf("Split(%q) = %q, want %q", list, got, want)
		}
	}
	items := []Item{Of(GPU, "h100", 2), Of(Shard, "h100_g0", 79), Of(Shard, "", 158)}
	if got := Join(items); got != "gpu:h100:2,shard:h100_g0:79,shard:158" {
		t.Errorf("Join = %q", got)
	}
}

func TestTRESNames(t *testing.T) {
	if TRES(GPU, "") != "gres/gpu" || TRES(Shard, "") != "gres/shard" || TRES(GPU, "3g.20gb") != "gres/gpu:3g.20gb" {
		t.Errorf("TRES names: %q %q %q", TRES(GPU, ""), TRES(Shard, ""), TRES(GPU, "3g.20gb"))
	}
	for s, want := range map[string][3]string{
		"gres/gpu:h100": {"gpu", "h100", "y"}, "gres/shard": {"shard", "", "y"}, "cpu": {"", "", ""}, "gres/": {"", "", ""}, "billing": {"", "", ""},
	} {
		name, typ, ok := CutTRES(s)
		if name != want[0] || typ != want[1] || ok != (want[2] == "y") {
			t.Errorf("CutTRES(%q) = %q, %q, %v; want %v", s, name, typ, ok, want)
		}
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _ = Parse("gres/shard:l4_g0:7(7/22,0/22)") }); n != 0 {
		t.Errorf("Parse allocates %v times", n)
	}
}

// FuzzParse: Parse never panics, and what String writes reads back as the same item.
func FuzzParse(f *testing.F) {
	for _, fm := range forms {
		f.Add(fm.s)
	}
	f.Add("gpu:2:3")
	f.Add("shard:20(a(b))")
	f.Fuzz(func(t *testing.T, s string) {
		it, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(it.String())
		if err != nil || again != it {
			t.Fatalf("%q: %+v written as %q reads back as %+v, %v", s, it, it.String(), again, err)
		}
		for _, part := range Split(s) {
			_, _ = Parse(part)
		}
	})
}

// TestGPUValue: a --gpus* value written as an entry with each prefix reads back the same.
func TestGPUValue(t *testing.T) {
	for _, prefix := range []string{"", Colon, Slash} {
		for _, v := range []string{"2", "h100:2", "mem:20g"} {
			e := WithGPU(prefix, v)
			if got, ok := CutGPU(e); !ok || got != v {
				t.Errorf("CutGPU(%q) = %q, %v; want %q", e, got, ok, v)
			}
		}
	}
	if v, ok := CutGPU("gres/shard:2"); ok {
		t.Errorf("CutGPU(gres/shard:2) = %q, true", v)
	}
}
