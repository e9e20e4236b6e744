package plugin

import (
	"strings"
	"testing"
)

// TestModify: scontrol update of a pending job, with the job as slurmctld holds it.
func TestModify(t *testing.T) {
	p := realPlugin(t, &logSink{})
	mig := Fields{PerNode: "gres:gpu:2g.10gb:1", Partition: "gpu"}
	shards := Fields{PerNode: "gres:shard:5", Partition: "gpu"}
	cases := []struct {
		name      string
		in        Fields
		cur       *Fields
		keep      bool
		why       Unread // when cur is nil
		want      Fields // the update as written back, when accepted
		refusal   []string
		unchanged bool
	}{
		{name: "a MIG job moved where no MIG is: refused, naming where it runs", in: Fields{Partition: "train"}, cur: &mig,
			refusal: []string{"the job holds gpu:2g.10gb:1", "partition train", "it runs in partition gpu", "submit it again"}},
		{name: "a MIG job kept off its node: refused", in: Fields{ExcNodes: "n2"}, cur: &mig, refusal: []string{"--exclude=n2"}},
		{name: "a shard job moved where shards are", in: Fields{Partition: "train"}, cur: &shards, want: Fields{Partition: "train"}},
		{name: "new size: decided in the job's partition", in: Fields{PerNode: "gres:gpu:mem:30g"}, cur: &mig, want: Fields{PerNode: "gres:shard:30"}},
		{name: "new size where the GRES name stays: MIG to a whole GPU", in: Fields{PerNode: "gres:gpu:mem:30g"}, cur: &mig, keep: true,
			want: Fields{PerNode: "gres:gpu:h100:1"}},
		{name: "new size that only another GRES name holds", in: Fields{PerNode: "gres:gpu:2,gres:gpu:mem:10g"}, cur: &shards, keep: true,
			refusal: []string{"the job holds shard:5", "cannot change a pending job's GRES between shards and GPUs", "--gres=gpu:mem:10g --gpus-per-node=2"}},
		{name: "a size nothing holds", in: Fields{PerNode: "gres:gpu:mem:900g"}, cur: &shards, keep: true, refusal: []string{"900g"}},
		{name: "a new size for a job this build cannot read: refused, saying what to do", in: Fields{PerNode: "gres:gpu:mem:30g"}, why: NoLayout,
			refusal: []string{"cannot check a change of GPU memory", "submit it again with the new --gres=gpu:mem"}},
		{name: "a new size for an array task: refused, naming the plain job id form", in: Fields{PerNode: "gres:gpu:mem:30g"}, why: NotOneJob,
			refusal: []string{"plain job id", "scontrol update jobid=1234 gres=gpu:mem:SIZE"}},
		{name: "a new size for a record that failed its checks: refused", in: Fields{PerNode: "gres:gpu:mem:30g"}, why: NotARecord,
			refusal: []string{"could not be read", "submit it again"}},
		{name: "a move of a job that cannot be read is Slurm's to judge", in: Fields{Partition: "train"}, why: NoLayout, want: Fields{Partition: "train"}},
		{name: "a job gpumem did not translate is left alone", in: Fields{Partition: "train"}, cur: &Fields{PerNode: "gres:nic:1", Partition: "gpu"}, want: Fields{Partition: "train"}},
	}
	for _, c := range cases {
		v := p.Modify(c.in, c.cur, c.keep, c.why)
		if c.refusal != nil {
			for _, w := range c.refusal {
				if !strings.Contains(v.Refusal, w) {
					t.Errorf("%s: refusal %q\nwant it to say %q", c.name, v.Refusal, w)
				}
			}
			continue
		}
		if v.Refusal != "" || v.Fields != c.want {
			t.Errorf("%s: got %+v %q\nwant %+v", c.name, v.Fields, v.Refusal, c.want)
		}
	}
}
