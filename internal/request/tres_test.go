package request

import (
	"reflect"
	"testing"

	"github.com/gpumem/gpumem/internal/units"
)

func TestParseForms(t *testing.T) {
	cases := []struct {
		field, in string
		want      []Entry
	}{
		{PerNode, "gres:gpu:mem:20g", []Entry{{Raw: "gres:gpu:mem:20g", Prefix: "gres:", Kind: GPUMem, MiB: 20480}}},
		{PerNode, "gres/gpu:mem:20G", []Entry{{Raw: "gres/gpu:mem:20G", Prefix: "gres/", Kind: GPUMem, MiB: 20480}}},
		{PerNode, "gpu:mem:20gb", []Entry{{Raw: "gpu:mem:20gb", Kind: GPUMem, MiB: 19074}}},
		{PerNode, "gres:gpu:mem:20480m,gres:gpu:2", []Entry{
			{Raw: "gres:gpu:mem:20480m", Sep: ",", Prefix: "gres:", Kind: GPUMem, MiB: 20480},
			{Raw: "gres:gpu:2", Prefix: "gres:", Kind: GPUCount, GPUs: 2}}},
		{PerJob, "gres/gpu:h100:4", []Entry{{Raw: "gres/gpu:h100:4", Prefix: "gres/", Kind: GPUCount, Type: "h100", GPUs: 4}}},
		{PerJob, "gres/gpu:h100", []Entry{{Raw: "gres/gpu:h100", Prefix: "gres/", Kind: GPUCount, Type: "h100", GPUs: 1}}},
		{PerJob, "gres/gpu", []Entry{{Raw: "gres/gpu", Prefix: "gres/", Kind: GPUCount, GPUs: 1}}},
		{PerTask, "cpu=4;gres/gpu=1", []Entry{{Raw: "cpu=4", Sep: ";"}, {Raw: "gres/gpu=1", Prefix: "gres/", Kind: GPUCount, GPUs: 1}}},
		{PerSocket, "gres:gpu:1", []Entry{{Raw: "gres:gpu:1", Prefix: "gres:", Kind: GPUCount, GPUs: 1}}},
		{PerNode, "gres:license:x:3,gres:shard:2", []Entry{{Raw: "gres:license:x:3", Sep: ",", Prefix: "gres:"}, {Raw: "gres:shard:2", Prefix: "gres:"}}},
	}
	for _, c := range cases {
		got, err := Parse(c.field, c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got.Entries, c.want) {
			t.Errorf("Parse(%q)\n got %+v\nwant %+v", c.in, got.Entries, c.want)
		}
		if got.String() != c.in {
			t.Errorf("Parse(%q).String() = %q", c.in, got.String())
		}
	}
}

func TestParseRejects(t *testing.T) {
	const size = "; e.g. gpu:mem:20g (20 GiB), gpu:mem:20480m, gpu:mem:1.5t"
	cases := []struct{ field, in, err string }{
		{PerNode, "gres:gpu:mem:20", `--gres entry "gres:gpu:mem:20" has a bad size: has no unit (k, m, g, t, kib..tib, kb..tb)` + size},
		{PerNode, "gres/gpu:mem:0g", `--gres entry "gres/gpu:mem:0g" has a bad size: is zero: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + size},
		{PerNode, "gres:gpu:mem:0", `--gres entry "gres:gpu:mem:0" has a bad size: is zero: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + size},
		{PerNode, "gres/gpu:mem:-1g", `--gres entry "gres/gpu:mem:-1g" has a bad size: is negative: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + size},
		{PerNode, "gres/gpu:mem:9999999t", `--gres entry "gres/gpu:mem:9999999t" has a bad size: is larger than 1024t` + size},
		{PerNode, "gpu:mem", `--gres entry "gpu:mem" needs exactly one size after gpu:mem; e.g. gpu:mem:20g, with --gpus-per-node=2 for two such GPUs`},
		{PerNode, "gpu:mem:20g:2", `--gres entry "gpu:mem:20g:2" needs exactly one size after gpu:mem; e.g. gpu:mem:20g, with --gpus-per-node=2 for two such GPUs`},
		{PerJob, "gres:gpu:0", `--gpus entry "gres:gpu:0" asks for zero GPUs; e.g. gpu:1`},
		{PerJob, "gres:gpu:h100:x", `--gpus entry "gres:gpu:h100:x" has a GPU count that is not a whole number; e.g. gpu:2`},
		{PerJob, "gres:gpu:h100:-1", `--gpus entry "gres:gpu:h100:-1" has a GPU count that is not a whole number; e.g. gpu:2`},
		{PerJob, "gres:gpu:99999999999999999999", `--gpus entry "gres:gpu:99999999999999999999" asks for more than 1048576 GPUs; e.g. gpu:2`},
		{PerJob, "gres:gpu:2000000", `--gpus entry "gres:gpu:2000000" asks for more than 1048576 GPUs; e.g. gpu:2`},
		{PerJob, "gres:gpu:a:b:c", `--gpus entry "gres:gpu:a:b:c" has too many ':' parts; e.g. gpu:h100:2`},
		{PerJob, "gres:gpu::2", `--gpus entry "gres:gpu::2" has an empty or malformed GPU type; e.g. gpu:h100:2`},
		{PerJob, "gres:gpu:", `--gpus entry "gres:gpu:" has an empty or malformed GPU type; e.g. gpu:h100:2`},
		{PerTask, "gres/gpu:h 1:2", `--gpus-per-task entry "gres/gpu:h 1:2" has an empty or malformed GPU type; e.g. gpu:h100:2`},
	}
	for _, c := range cases {
		_, err := Parse(c.field, c.in)
		if err == nil || err.Error() != c.err {
			t.Errorf("Parse(%q) error\n got %v\nwant %s", c.in, err, c.err)
		}
	}
}

func TestRewriteKeepsOtherGRESByteForByte(t *testing.T) {
	in := "gres:license:x:3;gres:gpu:mem:20g,gres:nic:Mellanox_CX7:1,,gres:gpu:2"
	tr, err := Parse(PerNode, in)
	if err != nil {
		t.Fatal(err)
	}
	got := tr.Rewrite([3]bool{GPUMem: true, GPUCount: true}, "shard:20", tr.Prefix())
	want := "gres:license:x:3;gres:nic:Mellanox_CX7:1,,gres:shard:20"
	if got != want {
		t.Errorf("rewrite = %q, want %q", got, want)
	}
	if tr.String() != in {
		t.Errorf("rewrite changed the parsed original: %q", tr.String())
	}
	if i := tr.Find(GPUCount); i != 4 {
		t.Errorf("Find(GPUCount) = %d, want 4", i)
	}
	empty, _ := Parse(PerNode, "")
	if s := empty.Rewrite([3]bool{}, "shard:3", "gres/"); s != "gres/shard:3" {
		t.Errorf("Rewrite on empty = %q", s)
	}
	if s := tr.Rewrite([3]bool{GPUMem: true}, "", ""); s != "gres:license:x:3;gres:nic:Mellanox_CX7:1,,gres:gpu:2" {
		t.Errorf("Rewrite dropping only gpu:mem = %q", s)
	}
	if s := tr.Rewrite([3]bool{}, "", ""); s != in {
		t.Errorf("Rewrite dropping nothing = %q, want the input", s)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"gres:gpu:mem:20g", "gres/gpu:mem:1.5t,gres/gpu:2", "cpu=4;gres/gpu=1",
		"gres:license:x:3,,gres:gpu:h100:4", "gpu:mem:20gb", "gres/gpu:mem:-1g", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := Parse(PerNode, s)
		if err != nil {
			return
		}
		if tr.String() != s {
			t.Fatalf("String(Parse(%q)) = %q", s, tr.String())
		}
		again, err := Parse(PerNode, tr.String())
		if err != nil || !reflect.DeepEqual(again, tr) {
			t.Fatalf("Parse(String(Parse(%q))) = %+v, %v; want %+v", s, again, err, tr)
		}
		for _, e := range tr.Entries {
			if e.Kind == GPUMem {
				if e.MiB < 1 || e.MiB > MaxMiB {
					t.Fatalf("%q: size %d MiB out of range", s, e.MiB)
				}
				back, err := ParseSize(units.FormatSize(e.MiB))
				if err != nil || back != e.MiB {
					t.Fatalf("%q: FormatSize(%d) does not read back: %d, %v", s, e.MiB, back, err)
				}
			}
		}
	})
}

func TestHasMem(t *testing.T) {
	for s, want := range map[string]bool{
		"gres:gpu:mem:20g": true, "gres/gpu:mem:x": true, "gpu:mem": true, "gres:license:a:1;gres/gpu:mem:1g": true,
		"gres:gpu:memory:2": false, "gres:gpu:2": false, "": false, "gres:gpu:h100:1,gres:shard:mem": false, "license:gpu:mem:1": false,
	} {
		if got := HasMem(s); got != want {
			t.Errorf("HasMem(%q) = %v, want %v", s, got, want)
		}
	}
}
