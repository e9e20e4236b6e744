package admit

import (
	"strings"
	"testing"
)

// TestHolds: a change of partition, features or nodes is checked against the native GRES
// the job was given at submit.
func TestHolds(t *testing.T) {
	a := labAdmitter(t)
	cases := []struct {
		j    Job
		says string // "" when it still runs
	}{
		{Job{TresPerNode: "gres/gpu:2g.10gb:1", Partitions: []string{"train"}}, ""},
		{Job{TresPerNode: "gres/gpu:2g.10gb:1", Partitions: []string{"inference"}}, "it runs in partition gpu, train"},
		{Job{TresPerNode: "gres/gpu:2g.10gb:1", Features: "h100"}, "under --constraint=h100"},
		{Job{TresPerNode: "gres/shard:30", Partitions: []string{"train"}}, ""},
		{Job{TresPerNode: "gres/shard:30", ReqNodes: "n3"}, "under --nodelist=n3"},
		{Job{TresPerNode: "gres/gpu:l4:4", ExcNodes: "n3"}, "--exclude=n3"},
		{Job{TresPerJob: "gres/gpu:h100:3"}, "gpu:h100:3"},                             // two H100s in the lab
		{Job{TresPerNode: "gres/gpu:1", Partitions: []string{"inference"}}, ""},        // not gpumem's form
		{Job{TresPerNode: "gres/shard:h100:3", Partitions: []string{"inference"}}, ""}, // typed shards: Slurm's to judge
		{Job{TresPerNode: "gres/nic:1"}, ""},
	}
	for _, c := range cases {
		err := a.Holds(c.j)
		switch {
		case c.says == "" && err != nil:
			t.Errorf("%+v: refused: %v", c.j, err)
		case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
			t.Errorf("%+v: %v\nwant a refusal saying %q", c.j, err, c.says)
		}
	}
}

// TestKeep: where Slurm refuses to change a pending job's GRES name, a new size is decided
// among forms of the name the job holds.
func TestKeep(t *testing.T) {
	a := labAdmitter(t)
	d, err := a.Admit(Job{TresPerNode: "gres/gpu:mem:15g", ReqNodes: "n2", Keep: "gres/gpu:2g.10gb:1"})
	if err != nil || d.TresPerNode != "gres/gpu:3g.20gb:1" {
		t.Errorf("MIG job, 15g on n2: %+v %v", d.TresPerNode, err)
	}
	d, err = a.Admit(Job{TresPerNode: "gres/gpu:mem:30g", Keep: "gres/gpu:2g.10gb:1"})
	if err != nil || d.TresPerNode != "gres/gpu:h100:1" {
		t.Errorf("MIG job, 30g: %+v %v; want a whole H100, not shards", d.TresPerNode, err)
	}
	_, err = a.Admit(Job{TresPerNode: "gres/gpu:mem:15g", ReqNodes: "n2", Keep: "gres/shard:5"})
	if err == nil || !strings.Contains(err.Error(), "which needs gpu:3g.20gb:1; the job holds shard:5") {
		t.Errorf("shard job, 15g on the MIG node: %v", err)
	}
}
