package gresconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// validator is a Validator from a function.
type validator func(c inventory.Cluster, b []byte) error

func (v validator) Validate(c inventory.Cluster, b []byte) (bool, error) { return false, v(c, b) }

// TestPipelineRunsEachStepOnce: a node joins the inventory directory, gres.conf covers
// every node there, and the hook (the caller's, on Result.Changed) runs only when
// gres.conf changed.
func TestPipelineRunsEachStepOnce(t *testing.T) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "inv")
	if _, _, err := inventory.WriteNode(inv, lab().Nodes[0]); err != nil { // n3 is already there
		t.Fatal(err)
	}
	hooks, wrote := 0, map[string]bool{}
	p := Input{InventoryDir: inv, Merge: true, Out: filepath.Join(dir, "gres.conf"), NodeGresDir: filepath.Join(dir, "node-gres"),
		Options: &Options{DevPrefix: "/lab/dev"}}
	// build runs Build on nodes as a caller does: it reports each file, and runs the
	// hook when gres.conf changed.
	build := func(nodes []inventory.Node) (Result, error) {
		in := p
		in.Cluster = inventory.Cluster{Nodes: nodes}
		res, err := Build(in)
		for _, f := range res.Inventory {
			wrote[filepath.Base(f.Path)] = f.Changed
		}
		if res.Installed {
			wrote[filepath.Base(in.Out)] = res.Changed
		}
		if res.Changed {
			hooks++
		}
		return res, err
	}
	n1 := lab().Nodes[1:2]
	res, err := build(n1)
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
	if g, _ := os.ReadFile(filepath.Join(dir, "node-gres", "n3")); string(g) != "gpu:l4:2,shard:l4:22\n" {
		t.Errorf("node-gres/n3 = %q", g)
	}
	if res, err := build(n1); err != nil || res.Changed || hooks != 1 || wrote["gres.conf"] {
		t.Fatalf("second run: %v, changed %v, %d hooks; want nothing changed and no hook", err, res.Changed, hooks)
	}

	// A check that fails keeps the old file and runs no hook; the inventory still goes in.
	p.Check = validator(func(c inventory.Cluster, b []byte) error {
		if len(c.Nodes) != 3 {
			t.Errorf("checked %d nodes; want the merged 3", len(c.Nodes))
		}
		return errors.New("slurmd says no")
	})
	_, err = build(lab().Nodes[2:3])
	if err == nil || !strings.Contains(err.Error(), "not replaced: slurmd says no") || hooks != 1 {
		t.Fatalf("rejected run: %v, %d hooks", err, hooks)
	}
	if now, _ := os.ReadFile(p.Out); string(now) != string(conf) {
		t.Error("a rejected gres.conf replaced the old one")
	}
	if _, err := os.Stat(filepath.Join(inv, "n2.json")); err != nil {
		t.Errorf("the inventory step did not run: %v", err)
	}

	// Without Options the build stops after the inventory.
	p = Input{InventoryDir: inv, Out: filepath.Join(dir, "never.conf")}
	if res, err := build(n1); err != nil || res.Data != nil {
		t.Fatalf("inventory only: %v, %d bytes rendered", err, len(res.Data))
	}
	if _, err := os.Stat(p.Out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("inventory only wrote %s", p.Out)
	}
}

func TestPipelineRefusesNodeNamesThatAreNotHostNames(t *testing.T) {
	dir := t.TempDir()
	bad := inventory.Cluster{Nodes: lab().Nodes[:1]}
	bad.Nodes[0].Name = "../n3"
	for _, p := range []Input{
		{Cluster: bad, InventoryDir: filepath.Join(dir, "inv")},
		{Cluster: bad, NodeGresDir: filepath.Join(dir, "node-gres"), Options: &Options{}},
	} {
		if _, err := Build(p); err == nil || !strings.Contains(err.Error(), "plain host name") {
			t.Errorf("%+v: %v; want a refusal of ../n3", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "n3")); err == nil {
		t.Error("wrote outside the directory")
	}
}
