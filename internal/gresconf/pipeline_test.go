package gresconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// TestPipelineRunsEachStepOnce: a node joins the inventory directory, gres.conf covers
// every node there, and the hook runs only when gres.conf changed.
func TestPipelineRunsEachStepOnce(t *testing.T) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "inv")
	if _, _, err := inventory.WriteNode(inv, lab().Nodes[0]); err != nil { // n3 is already there
		t.Fatal(err)
	}
	hooks, wrote := 0, map[string]bool{}
	p := Pipeline{InventoryDir: inv, Merge: true, Out: filepath.Join(dir, "gres.conf"), NodeGresDir: filepath.Join(dir, "node-gres"),
		Render: func() (Options, error) { return Options{DevPrefix: "/lab/dev"}, nil },
		Hook:   func() { hooks++ },
		Wrote:  func(path string, changed bool) { wrote[filepath.Base(path)] = changed }}
	n1 := func() (inventory.Cluster, error) { return inventory.Cluster{Nodes: lab().Nodes[1:2]}, nil }
	res, err := p.Run(n1)
	if err != nil || !res.Changed || len(res.Cluster.Nodes) != 2 || hooks != 1 {
		t.Fatalf("first run: %v, changed %v, %d nodes, %d hooks", err, res.Changed, len(res.Cluster.Nodes), hooks)
	}
	if !wrote["n1.json"] || !wrote["gres.conf"] || len(wrote) != 2 {
		t.Errorf("wrote %v; want n1.json and gres.conf", wrote)
	}
	conf, _ := os.ReadFile(p.Out)
	for _, want := range []string{"NodeName=n1 Name=shard Count=79", "NodeName=n3 Name=shard Count=22"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("gres.conf lacks %q:\n%s", want, conf)
		}
	}
	if g, _ := os.ReadFile(filepath.Join(dir, "node-gres", "n3")); string(g) != "gpu:l4:2,shard:22\n" {
		t.Errorf("node-gres/n3 = %q", g)
	}
	if res, err := p.Run(n1); err != nil || res.Changed || hooks != 1 || wrote["gres.conf"] {
		t.Fatalf("second run: %v, changed %v, %d hooks; want nothing changed and no hook", err, res.Changed, hooks)
	}

	// A check that fails keeps the old file and runs no hook; the inventory still goes in.
	p.Check = func(c inventory.Cluster, b []byte) error {
		if len(c.Nodes) != 3 {
			t.Errorf("checked %d nodes; want the merged 3", len(c.Nodes))
		}
		return errors.New("slurmd says no")
	}
	_, err = p.Run(func() (inventory.Cluster, error) { return inventory.Cluster{Nodes: lab().Nodes[2:3]}, nil })
	if err == nil || !strings.Contains(err.Error(), "not replaced: slurmd says no") || hooks != 1 {
		t.Fatalf("rejected run: %v, %d hooks", err, hooks)
	}
	if now, _ := os.ReadFile(p.Out); string(now) != string(conf) {
		t.Error("a rejected gres.conf replaced the old one")
	}
	if _, err := os.Stat(filepath.Join(inv, "n2.json")); err != nil {
		t.Errorf("the inventory step did not run: %v", err)
	}

	// Without Render the pipeline stops after the inventory.
	p = Pipeline{InventoryDir: inv, Out: filepath.Join(dir, "never.conf")}
	if res, err := p.Run(n1); err != nil || res.Data != nil {
		t.Fatalf("inventory only: %v, %d bytes rendered", err, len(res.Data))
	}
	if _, err := os.Stat(p.Out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("inventory only wrote %s", p.Out)
	}
}

func TestPipelineRefusesNodeNamesThatAreNotHostNames(t *testing.T) {
	dir := t.TempDir()
	bad := func() (inventory.Cluster, error) {
		c := inventory.Cluster{Nodes: lab().Nodes[:1]}
		c.Nodes[0].Name = "../n3"
		return c, nil
	}
	for _, p := range []Pipeline{
		{InventoryDir: filepath.Join(dir, "inv")},
		{NodeGresDir: filepath.Join(dir, "node-gres"), Render: func() (Options, error) { return Options{}, nil }},
	} {
		if _, err := p.Run(bad); err == nil || !strings.Contains(err.Error(), "plain host name") {
			t.Errorf("%+v: %v; want a refusal of ../n3", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "n3")); err == nil {
		t.Error("wrote outside the directory")
	}
}
