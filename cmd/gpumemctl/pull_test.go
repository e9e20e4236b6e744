package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// A controller without a shared /etc/slurm pulls each node's inventory from its gpumemd,
// writes the NodeName lines slurm.conf Includes, and keeps a node's last good file when
// it does not answer or answers garbage.
func TestInventoryPull(t *testing.T) {
	dir := t.TempDir()
	// What each node's gpumemd serves: the inventory it discovered, as `inventory` prints it.
	var files [2][]byte
	for i, n := range []string{"n1", "n2"} {
		out, err := run(t, "inventory", "--nvml=fake:../../test/lab/nodes/"+n+".json", "--node", n)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = []byte(out)
	}
	var garbage atomic.Bool
	addr := func(i int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/inventory" {
				http.NotFound(w, r)
				return
			}
			if i == 0 && garbage.Load() {
				w.Write([]byte(`{"nodes": [{"name": "n1", "gpus": [{"type": "h100", "memory_mib": -1}]}]}`))
				return
			}
			w.Write(files[i])
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // n3: a port where nothing answers
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()

	tmpl := filepath.Join(dir, "gpu-nodes.conf.in")
	os.WriteFile(tmpl, []byte("# the admin's GPU nodes\nNodeName=n1 NodeAddr="+addr(0)+" CPUs=16\nNodeName=n2 NodeAddr="+addr(1)+
		" CPUs=16 Features=a100\nNodeName=n3 NodeAddr="+down+" CPUs=16\n"), 0o644)
	slurm := filepath.Join(dir, "slurm.conf")
	os.WriteFile(slurm, []byte("ClusterName=t\nGresTypes=gpu,shard\nInclude gpu-nodes.conf\nPartitionName=train Nodes=n[1-3] Default=YES\n"), 0o644)
	conf := filepath.Join(dir, "gpumem.conf")
	inv := filepath.Join(dir, "gpumem.d")
	os.WriteFile(conf, []byte("ShardUnit = 1GiB\nInventoryPath = "+inv+"\nSlurmConf = "+slurm+"\n"), 0o644)
	os.MkdirAll(inv, 0o755)
	os.WriteFile(filepath.Join(inv, "x9.json"), []byte(`{"nodes": [{"name": "x9", "gpus": []}]}`), 0o644) // not pull's
	lines := filepath.Join(dir, "gpu-nodes.conf")
	pull := func() (string, error) {
		return run(t, "inventory", "pull", "--config", conf, "--node-template", tmpl, "--node-lines", lines,
			"--url", "http://{addr}/inventory", "--timeout", "2s", "--slurm-version", "22.05")
	}

	out, err := pull()
	var st exitStatus
	if !errors.As(err, &st) || st.code != 1 || !strings.Contains(out, "node n3") || !strings.Contains(out, "last inventory is kept") {
		t.Fatalf("n3 down: want exit 1 naming n3; got %v\n%s", err, out)
	}
	c, err := inventory.LoadPath(inv)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]inventory.Node{}
	for _, n := range c.Nodes {
		got[n.Name] = n
	}
	if len(got["n1"].GPUs) == 0 || len(got["n2"].GPUs) == 0 || got["x9"].Name == "" || len(got) != 3 {
		t.Fatalf("inventory after pull: %v", c.Nodes)
	}
	if p := got["n1"].Partitions; len(p) != 1 || p[0] != "train" {
		t.Errorf("n1's partitions %v: want the controller's slurm.conf's [train]", p)
	}
	b, _ := os.ReadFile(lines)
	for _, want := range []string{"# Written by gpumemctl inventory pull", "NodeName=n1 NodeAddr=", " Gres=gpu:", "NodeName=n3 NodeAddr=" + down + " CPUs=16\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("node lines lack %q:\n%s", want, b)
		}
	}
	if strings.Count(string(b), "Gres=") != 2 {
		t.Errorf("node lines: want Gres= for n1 and n2 only:\n%s", b)
	}

	// n1 now answers an invalid inventory: its file stays as it was.
	before, _ := os.ReadFile(filepath.Join(inv, "n1.json"))
	garbage.Store(true)
	out, err = pull()
	if !errors.As(err, &st) || st.code != 1 || !strings.Contains(out, "node n1") || !strings.Contains(out, "memory_mib") {
		t.Fatalf("n1 garbage: want exit 1 naming n1 and what was wrong; got %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(filepath.Join(inv, "n1.json")); string(after) != string(before) {
		t.Errorf("n1's last good file was replaced:\n%s", after)
	}
	if b2, _ := os.ReadFile(lines); string(b2) != string(b) {
		t.Errorf("node lines changed though no GPU did:\n%s", b2)
	}
	if _, err := os.Stat(filepath.Join(inv, "x9.json")); err != nil {
		t.Errorf("a file pull did not write is gone: %v", err)
	}
}

func TestInventoryPullRefusesWhatCannotWork(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "n1", "--url", "http://10.0.0.1:9402/inventory"}, "names no node"},
		{[]string{"--nodes", "n1", "--node-lines", filepath.Join(dir, "x")}, "go together"},
		{[]string{"--slurm-conf", filepath.Join(dir, "none.conf")}, "name the nodes with --nodes"},
		{[]string{"--nodes", "../etc"}, "plain host name"},
	} {
		_, err := run(t, append([]string{"inventory", "pull", "--config", "/dev/null", "--inventory-dir", dir}, c.args...)...)
		var st exitStatus
		if !errors.As(err, &st) || st.code != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want exit 2 saying %q", c.args, err, c.want)
		}
	}
}

// --every pulls again and again until stopped, and a stop is a clean end.
func TestInventoryPullEvery(t *testing.T) {
	dir := t.TempDir()
	file, err := run(t, "inventory", "--nvml=fake:../../test/lab/nodes/n3.json", "--node", "n3")
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		w.Write([]byte(file))
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"inventory", "pull", "--config", "/dev/null", "--inventory-dir", dir, "--nodes", "n3",
		"--slurm-conf", filepath.Join(dir, "none.conf"), "--url", srv.URL + "/{node}", "--every", "100ms"})
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("--every ended with %v\n%s", err, out.String())
	}
	if n := asked.Load(); n < 3 {
		t.Errorf("asked %d times in 1s at --every 100ms", n)
	}
	if strings.Count(out.String(), "n3.json: written") != 1 || strings.Contains(out.String(), "unchanged") {
		t.Errorf("--every reports only changes; printed:\n%s", out.String())
	}
}
