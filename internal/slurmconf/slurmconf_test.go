package slurmconf

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string]string{
		"n1":                  "n1",
		"n[1-3]":              "n1,n2,n3",
		"n[1-3,5],gpu[08-10]": "n1,n2,n3,n5,gpu08,gpu09,gpu10",
		"r[1-2]n[1-2]":        "r1n1,r1n2,r2n1,r2n2",
		"a, b":                "a,b",
		"node-[7]":            "node-7",
	} {
		got, err := ExpandHostlist(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"n[1-", "n[3-1]", "n[a]", "n]1", "n[1-100000000]"} {
		if _, err := ExpandHostlist(bad); err == nil {
			t.Errorf("ExpandHostlist(%q) accepted", bad)
		}
	}
}

// TestExpandHostlistMaxStopsEarly: a bounded expansion fails on lists that name more
// hosts than the bound, however they are written, and never builds them first (a
// 139-byte string could otherwise name millions).
func TestExpandHostlistMaxStopsEarly(t *testing.T) {
	for _, in := range []string{"n[1-5]", "a,b,c,d,e", "r[1-2]n[1-3]", "n[0-99999999],x"} {
		if got, err := ExpandHostlistMax(in, 4); err == nil || !strings.Contains(err.Error(), "more than 4 hosts") {
			t.Errorf("ExpandHostlistMax(%q, 4) = %d names, %v; want an error naming the bound", in, len(got), err)
		}
	}
	if got, err := ExpandHostlistMax("n[1-2],m[1-2]", 4); err != nil || len(got) != 4 {
		t.Errorf("4 hosts under a bound of 4: %v, %v", got, err)
	}
	bomb := "x[" + strings.Repeat("0-99999,", 16) + "0-9]y[0-99999]"
	allocs := testing.AllocsPerRun(1, func() { _, _ = ExpandHostlistMax(bomb, 1000) })
	if allocs > 10000 {
		t.Errorf("a list past the bound cost %.0f allocations before failing", allocs)
	}
}

const conf = `# lab
ClusterName=lab
GresTypes=gpu,shard
NodeName=DEFAULT CPUs=8 RealMemory=16000 \
   State=UNKNOWN
NodeName=n[1-2] Gres=gpu:h100:2,shard:158   # two H100s
nodename=n3 CPUs=4 Gres=gpu:l4:4,shard:88 Reason="a # in quotes"
PartitionName=DEFAULT MaxTime=60
PartitionName=gpu Nodes=n[1-3] Default=YES
PartitionName=small Nodes=n3 Default=NO
PartitionName=all Nodes=ALL
`

func TestParse(t *testing.T) {
	c, err := Parse(conf)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 3 || c.Nodes[0].Name != "n1" || c.Nodes[2].Name != "n3" {
		t.Fatalf("nodes %+v", c.Nodes)
	}
	n1, _ := c.Node("n1")
	if n1.Get("CPUs") != "8" || n1.Get("gres") != "gpu:h100:2,shard:158" || n1.Get("state") != "UNKNOWN" {
		t.Errorf("n1 = %v; want the DEFAULT line's CPUs and State under its own Gres", n1.Params)
	}
	n3, _ := c.Node("n3")
	if n3.Get("cpus") != "4" || n3.Get("reason") != "a # in quotes" {
		t.Errorf("n3 = %v", n3.Params)
	}
	if c.DefaultPartition() != "gpu" {
		t.Errorf("default partition %q", c.DefaultPartition())
	}
	if got := strings.Join(c.PartitionsOf("n3"), ","); got != "gpu,small,all" {
		t.Errorf("n3 in %s", got)
	}
	if c.Partitions[0].Params["maxtime"] != "60" {
		t.Error("PartitionName=DEFAULT not applied")
	}
	if strings.Join(c.GresTypes, ",") != "gpu,shard" || c.Params["clustername"] != "lab" {
		t.Errorf("GresTypes %v, params %v", c.GresTypes, c.Params)
	}
}

func TestParseErrorsSayWhere(t *testing.T) {
	for text, want := range map[string]string{
		"NodeName=n1\nNodeName=n1\n":      "node n1 defined twice",
		"ClusterName=x\nbogus\n":          `slurm.conf:2: "bogus" is not Key=Value`,
		"NodeName=n[1-\n":                 "slurm.conf:1: host list",
		`NodeName=n1 Reason="open` + "\n": "unterminated quote",
		"Include nodes.conf\n":            "not read from a file",
	} {
		if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want %q", text, err, want)
		}
	}
}

func TestParseFileFollowsIncludes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "nodes.conf"), []byte("NodeName=g[1-2] Gres=gpu:a100:8\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte("Include nodes.conf\nPartitionName=p Nodes=g[1-2] Default=YES\n"), 0o644)
	c, err := ParseFile(filepath.Join(dir, "slurm.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 2 || c.DefaultPartition() != "p" {
		t.Fatalf("nodes %v, default %q", c.Nodes, c.DefaultPartition())
	}
	os.WriteFile(filepath.Join(dir, "loop.conf"), []byte("Include loop.conf\n"), 0o644)
	if _, err := ParseFile(filepath.Join(dir, "loop.conf")); err == nil || !strings.Contains(err.Error(), "levels deep") {
		t.Fatalf("include loop: %v", err)
	}
}

func TestAnnotateInventory(t *testing.T) {
	c, err := Parse(conf + "NodeName=n9 CPUs=2 Features=fast,nvme\n")
	if err != nil {
		t.Fatal(err)
	}
	cl := inventory.Cluster{Nodes: []inventory.Node{{Name: "n3"}, {Name: "n9"}, {Name: "elsewhere"}}}
	c.Annotate(&cl)
	n3, n9, other := cl.Nodes[0], cl.Nodes[1], cl.Nodes[2]
	if n3.CPUs != 4 || n3.MemoryMiB != 16000 || strings.Join(n3.Partitions, ",") != "gpu,small,all" {
		t.Errorf("n3 = %+v", n3)
	}
	if strings.Join(n9.Features, ",") != "fast,nvme" || strings.Join(n9.Partitions, ",") != "all" {
		t.Errorf("n9 = %+v", n9)
	}
	if other.CPUs != 0 || other.Partitions != nil {
		t.Errorf("a node slurm.conf lacks was changed: %+v", other)
	}
}

// TestParseFileRefusesWhatIsNotAConfigFile: a FIFO named as slurm.conf or included by
// it (which would block the reader inside slurmctld until some process writes), a
// device, and more than MaxBytes in all are refused at once, naming the file.
func TestParseFileRefusesWhatIsNotAConfigFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.conf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	half := strings.Repeat("# padding\n", MaxBytes/20+1)
	os.WriteFile(filepath.Join(dir, "half.conf"), []byte(half), 0o644)
	os.WriteFile(filepath.Join(dir, "big.conf"), []byte(half+half), 0o644)
	os.WriteFile(filepath.Join(dir, "twice.conf"), []byte("Include half.conf\nInclude half.conf\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "incfifo.conf"), []byte("Include fifo.conf\n"), 0o644)
	for name, want := range map[string]string{
		fifo:                               fifo + ": not a regular file (a FIFO)",
		"/dev/zero":                        "/dev/zero: not a regular file (a device)",
		filepath.Join(dir, "incfifo.conf"): fifo + ": not a regular file (a FIFO)",
		filepath.Join(dir, "big.conf"):     "big.conf: " + strconv.Itoa(len(half+half)) + " bytes, more than the 16777216 allowed",
		filepath.Join(dir, "twice.conf"):   "half.conf: " + strconv.Itoa(len(half)) + " bytes, more than the",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ParseFile(name)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ParseFile(%s): %v; want %q", name, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ParseFile(%s) still reading after 10s", name)
		}
	}
}
