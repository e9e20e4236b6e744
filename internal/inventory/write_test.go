package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func node() Node {
	return Node{Name: "n1", GPUs: []GPU{
		{Index: 0, Minor: 0, Type: "h100", MemoryMiB: 81559, Cores: "0-3"},
		{Index: 1, Minor: 1, Type: "h100", MemoryMiB: 81559, Cores: "4-7"},
	}}
}

func TestWriteNodeWritesWhatLoadPathReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpumem.d")
	p, changed, err := WriteNode(dir, node())
	if err != nil || !changed || p != filepath.Join(dir, "n1.json") {
		t.Fatalf("WriteNode = %s, %v, %v", p, changed, err)
	}
	if _, changed, _ := WriteNode(dir, node()); changed {
		t.Error("an unchanged node was rewritten")
	}
	c, err := LoadPath(dir)
	if err != nil || len(c.Nodes) != 1 || c.Nodes[0].GPUs[1].Cores != "4-7" {
		t.Fatalf("LoadPath = %+v, %v", c, err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), fmt.Sprintf(`"version": %d,`, FormatVersion)) {
		t.Errorf("the node file carries no format version:\n%s", b)
	}
}

func TestWriteNodeRefusesNamesThatAreNotHostNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"", "../n1", "a/b", "..", "n1..x", ".hidden", "/etc/passwd", "n 1"} {
		n := node()
		n.Name = name
		if _, _, err := WriteNode(filepath.Join(dir, "inv"), n); err == nil || !strings.Contains(err.Error(), "plain host name") {
			t.Errorf("WriteNode(%q): %v; want a refusal asking for a plain host name", name, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused names left %d entries behind", len(entries))
	}
	for _, name := range []string{"n1", "gpu-node-01", "a100_x.y"} {
		n := node()
		n.Name = name
		if _, _, err := WriteNode(filepath.Join(dir, "inv"), n); err != nil {
			t.Errorf("WriteNode(%q): %v", name, err)
		}
	}
}

func TestDecodeVersions(t *testing.T) {
	const nodes = `"nodes": [{"name": "n1", "gpus": [{"index": 0, "type": "l4", "memory_mib": 23034}]}]`
	for _, ok := range []string{`{` + nodes + `}`, `{"version": 1, ` + nodes + `}`} {
		if c, err := Decode([]byte(ok)); err != nil || len(c.Nodes) != 1 {
			t.Errorf("Decode(%s) = %+v, %v", ok, c, err)
		}
	}
	for in, want := range map[string]string{
		`{"version": 4, ` + nodes + `}`:  "format version 4; this gpumem reads versions 1 to 3",
		`{"version": -1, ` + nodes + `}`: "format version -1",
	} {
		if _, err := Decode([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s): %v; want %q", in, err, want)
		}
	}
	b, err := Cluster{Nodes: []Node{node()}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Decode(b); err != nil || len(c.Nodes) != 1 || c.Nodes[0].Name != "n1" {
		t.Errorf("round trip: %+v, %v", c, err)
	}
}

// A GPU's fence is one of the named kinds; an older file says none, MIG always holds one.
func TestFence(t *testing.T) {
	for in, want := range map[string]string{
		`{"version": 2, "nodes": [{"name": "n1", "gpus": [{"index": 0, "type": "l4", "memory_mib": 23034, "fence": "driver"}]}]}`: FenceDriver,
		`{"version": 1, "nodes": [{"name": "n1", "gpus": [{"index": 0, "type": "l4", "memory_mib": 23034}]}]}`:                    FenceNone,
		`{"version": 2, "nodes": [{"name": "n1", "gpus": [{"index": 0, "type": "a100", "memory_mib": 40960, "mig": true}]}]}`:     FenceHardware,
	} {
		c, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", in, err)
		}
		if got := c.Nodes[0].GPUs[0].FenceOf(); got != want {
			t.Errorf("Decode(%s): fence %q, want %q", in, got, want)
		}
	}
	bad := `{"version": 2, "nodes": [{"name": "n1", "gpus": [{"index": 0, "type": "l4", "memory_mib": 23034, "fence": "cgroup\nx"}]}]}`
	if _, err := Decode([]byte(bad)); err == nil || !strings.Contains(err.Error(), `want "hardware", "driver", "mps" or "none"`) {
		t.Errorf("Decode(bad fence): %v", err)
	}
}
