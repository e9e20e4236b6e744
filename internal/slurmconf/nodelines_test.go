package slurmconf

import (
	"strings"
	"testing"
)

func TestWithGres(t *testing.T) {
	tmpl := `# GPU nodes; gpumemctl adds Gres=
NodeName=DEFAULT CPUs=16 RealMemory=64000 State=UNKNOWN
NodeName=g[1-2] NodeAddr=10.0.0.1 Features="h100, nvlink" \
   Sockets=2 CoresPerSocket=8
NodeName=g3 Gres=gpu:old:4,nic:mlx:1(S:0,1) Weight=5
NodeName=g4 Gres=gpu:keep:1
NodeName=cpu[1-4] CPUs=64
`
	out, missing, err := WithGres(tmpl, map[string]string{
		"g1": "gpu:h100:2,shard:158", "g2": "gpu:h100:2,shard:158", "g3": "gpu:l4:2,shard:44", "g9": "gpu:a100:1",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `NodeName=DEFAULT CPUs=16 RealMemory=64000 State=UNKNOWN
NodeName=g1 NodeAddr=10.0.0.1 Features="h100, nvlink" Sockets=2 CoresPerSocket=8 Gres=gpu:h100:2,shard:158
NodeName=g2 NodeAddr=10.0.0.1 Features="h100, nvlink" Sockets=2 CoresPerSocket=8 Gres=gpu:h100:2,shard:158
NodeName=g3 Weight=5 Gres=gpu:l4:2,shard:44,nic:mlx:1(S:0,1)
NodeName=g4 Gres=gpu:keep:1
NodeName=cpu[1-4] CPUs=64
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	if strings.Join(missing, ",") != "g9" {
		t.Errorf("missing = %v, want [g9]", missing)
	}
	// What it writes is slurm.conf: it parses, with each node once.
	c, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Node("g2"); n.Get("gres") != "gpu:h100:2,shard:158" || n.Get("cpus") != "16" || n.Get("features") != "h100, nvlink" {
		t.Errorf("g2 parsed as %+v", n.Params)
	}
	if _, _, err := WithGres("NodeName=g[1-", nil); err == nil {
		t.Error("a broken hostlist was accepted")
	}
}

// A Gres= that would need quoting, or holds a line break, did not come from a checked
// inventory: it is refused, never written as a line of its own.
func TestWithGresRefusesWhatWouldBreakTheLine(t *testing.T) {
	for _, g := range []string{"gpu:h100:1\nPartitionName=evil Nodes=ALL", "gpu:h100:1 Weight=1", "gpu:h100:1#", `gpu:"h100":1`, "gpu:h100:1\r", "gpu:h\u00e9:1"} {
		out, _, err := WithGres("NodeName=g1 CPUs=16\n", map[string]string{"g1": g})
		if err == nil || !strings.Contains(err.Error(), "node g1") {
			t.Errorf("Gres=%q: wrote %q, err %v; want a refusal naming g1", g, out, err)
		}
	}
}
