package steer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// fakeSlurm answers as Slurm would and records every update asked of it.
type fakeSlurm struct {
	uses    []Use
	pending []Pending
	weights map[string]uint32
	refuse  func(args []string) error // an update Slurm refuses; nil: none
	readErr error
	updates [][]string
}

func (s *fakeSlurm) Jobs(context.Context) ([]Use, error) { return s.uses, s.readErr }
func (s *fakeSlurm) Pending(context.Context) ([]Pending, error) {
	return s.pending, nil
}
func (s *fakeSlurm) Weights(context.Context) (map[string]uint32, error) { return s.weights, nil }
func (s *fakeSlurm) Update(_ context.Context, args ...string) error {
	if s.refuse != nil {
		if err := s.refuse(args); err != nil {
			return err
		}
	}
	s.updates = append(s.updates, args)
	return nil
}

var now = time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC)

// controlled is a controller on a two-node cluster: n1 with two 80-shard H100s, 60
// shards taken on GPU 0; n3 with two 22-shard L4s. Job 21 has been pinned to n1's GPU 1
// for 30 s, job 23 to n3's GPU 1 for 1 s.
func controlled(t *testing.T) (*Controller, *fakeSlurm, *bytes.Buffer) {
	dir := t.TempDir()
	inv := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "n1", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{{Index: 0, Type: "h100", MemoryMiB: 81920}, {Index: 1, Type: "h100", MemoryMiB: 81920}}},
		{Name: "n3", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{{Index: 0, Type: "l4", MemoryMiB: 23034}, {Index: 1, Type: "l4", MemoryMiB: 23034}}},
	}}
	if _, err := inventory.WriteFile(filepath.Join(dir, "inventory.json"), inv); err != nil {
		t.Fatal(err)
	}
	s := &fakeSlurm{
		uses: []Use{{Node: "n1", GPU: 0, Shards: 60}},
		pending: []Pending{
			{ID: "21", Partitions: []string{"gpu"}, Shards: 20, Type: "h100_g1", ReqNodes: "n1", Submitted: now.Add(-30 * time.Second)},
			{ID: "23", Partitions: []string{"gpu"}, Shards: 5, Type: "l4_g1", ReqNodes: "n3", Submitted: now.Add(-time.Second)},
		},
		weights: map[string]uint32{"n1": 1, "n3": 1},
	}
	var out bytes.Buffer
	c := &Controller{Slurm: s, Inventory: filepath.Join(dir, "inventory.json"), PlacementPolicy: "best-fit", Sizes: []int64{20},
		UnitMiB: 1024, Base: 1, Snapshot: filepath.Join(dir, "usage.json"), UnpinOld: 20 * time.Second, Out: &out,
		Now: func() time.Time { return now }}
	return c, s, &out
}

func TestOnceUnpinsSnapshotsAndWeighs(t *testing.T) {
	c, s, out := controlled(t)
	if err := c.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Job 21 is unpinned. Best fit ranks n3 first (least free), so only n1 changes weight.
	want := [][]string{{"jobid=21", "gres=shard:20", "reqnodelist="}, {"nodename=n1", "weight=2"}}
	if !reflect.DeepEqual(s.updates, want) {
		t.Errorf("updates %q; want %q", s.updates, want)
	}
	for _, line := range []string{"steer: unpinned job 21 (shard:h100_g1:20 on n1)\n", "steer: best-fit, 2 pending, ranking n3 n1\n"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	b, err := os.ReadFile(c.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	// Running shards and job 23's pin; job 21, unpinned, is no longer held on its GPU 1
	// but counted where Slurm will start it now (ClaimQueue): n1's GPU 0, the first with
	// room on the first node by weight.
	if !snap.Taken.Equal(now) || snap.Version != SnapshotVersion || !reflect.DeepEqual(snap.Sizes, []int64{20}) ||
		!reflect.DeepEqual(snap.GPUs, []GPUUse{{"n1", 0, 80}, {"n3", 1, 5}}) {
		t.Errorf("snapshot %s", b)
	}
	if entries, _ := os.ReadDir(filepath.Dir(c.Snapshot)); len(entries) != 2 {
		t.Errorf("%d files beside the snapshot; want the inventory and the snapshot only", len(entries))
	}
}

// TestUnpinFallsBackToTheRequiredNode: Slurm 22.05 refuses to untype a GRES request;
// then only the required node is cleared, and a job Slurm refuses both is reported.
func TestUnpinFallsBackToTheRequiredNode(t *testing.T) {
	for _, refuseBoth := range []bool{false, true} {
		c, s, out := controlled(t)
		c.Sizes = nil // the jobs' own sizes
		s.refuse = func(args []string) error {
			if args[0] == "jobid=21" && (strings.HasPrefix(args[1], "gres=") || refuseBoth) {
				return errors.New("scontrol update: Invalid generic resource (gres) specification")
			}
			return nil
		}
		if err := c.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(c.Snapshot)
		snap, _ := DecodeSnapshot(b)
		if !refuseBoth {
			if len(s.updates) == 0 || !reflect.DeepEqual(s.updates[0], []string{"jobid=21", "reqnodelist="}) ||
				!strings.Contains(out.String(), "steer: job 21: required node n1 cleared; Slurm kept its GRES shard:h100_g1:20\n") {
				t.Errorf("fallback: updates %q, output:\n%s", s.updates, out)
			}
			if !reflect.DeepEqual(snap.GPUs, []GPUUse{{"n1", 0, 80}, {"n3", 1, 5}}) || !reflect.DeepEqual(snap.Sizes, []int64{60, 20, 5}) {
				t.Errorf("fallback snapshot %s; want job 21 no longer held on GPU 1 but where Slurm starts it, sizes of the jobs", b)
			}
			continue
		}
		if !strings.Contains(out.String(), "steer: job 21: cannot unpin: scontrol update: Invalid generic resource") {
			t.Errorf("refused: output:\n%s", out)
		}
		for _, u := range s.updates {
			if u[0] == "jobid=21" {
				t.Errorf("refused updates recorded: %q", s.updates)
			}
		}
		// Still pinned: its shards stay held on n1's GPU 1.
		if !reflect.DeepEqual(snap.GPUs, []GPUUse{{"n1", 0, 60}, {"n1", 1, 20}, {"n3", 1, 5}}) {
			t.Errorf("refused snapshot %s; want job 21's pin still held", b)
		}
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	c, s, out := controlled(t)
	c.DryRun = true
	if err := c.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(s.updates) != 0 {
		t.Errorf("dry run updated %q", s.updates)
	}
	if _, err := os.Stat(c.Snapshot); !os.IsNotExist(err) {
		t.Errorf("dry run wrote the snapshot: %v", err)
	}
	for _, line := range []string{"scontrol update jobid=21 gres=shard:20 reqnodelist=\n", "scontrol update nodename=n1 weight=2\n"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("dry run output lacks %q:\n%s", line, out)
		}
	}
}

func TestWithoutSnapshotNothingIsUnpinned(t *testing.T) {
	c, s, _ := controlled(t)
	c.Snapshot = ""
	if err := c.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.updates, [][]string{{"nodename=n1", "weight=2"}}) {
		t.Errorf("updates %q; want only the weight", s.updates)
	}
}

func TestSnapshotIsNotWrittenThroughALink(t *testing.T) {
	c, s, _ := controlled(t)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o600)
	if err := os.Symlink(victim, c.Snapshot); err != nil {
		t.Fatal(err)
	}
	if err := c.Once(context.Background()); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("snapshot over a link: %v; want a refusal naming the link", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("wrote %q through the link", b)
	}
	if len(s.updates) != 1 || s.updates[0][0] != "jobid=21" {
		t.Errorf("updates %q; want the unpin only, no weights after the failed snapshot", s.updates)
	}
}

func TestReadErrorsStopThePass(t *testing.T) {
	c, s, _ := controlled(t)
	s.readErr = errors.New("scontrol: slurmctld not responding")
	if err := c.Once(context.Background()); err == nil || !strings.Contains(err.Error(), "not responding") || len(s.updates) != 0 {
		t.Errorf("Once with Slurm down: %v, updates %q", err, s.updates)
	}
	c, s, _ = controlled(t)
	s.uses = append(s.uses, Use{Node: "n9", GPU: 0, Shards: 1})
	if err := c.Once(context.Background()); err == nil || !strings.Contains(err.Error(), "node n9") {
		t.Errorf("use on an unknown node: %v", err)
	}
}
