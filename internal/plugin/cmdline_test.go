package plugin

import "testing"

func TestRepeatedGres(t *testing.T) {
	for _, c := range []struct {
		args []string
		comp uint32
		want string
	}{
		{[]string{"--gres=gpu:mem:20g", "--gres=shard:3", "true"}, 0,
			"gpumem: you gave --gres 2 times (--gres=gpu:mem:20g --gres=shard:3), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:20g,shard:3"},
		{[]string{"-p", "gpu", "--gres", "nic:1", "--gres=gpu:mem:20g", "true"}, 0,
			"gpumem: you gave --gres 2 times (--gres=nic:1 --gres=gpu:mem:20g), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=nic:1,gpu:mem:20g"},
		{[]string{"--gres=gpu:mem:20g", "true"}, 0, ""},
		{[]string{"--gres=shard:3", "--gres=gpu:2", "true"}, 0, ""}, // not gpumem's
		// Each hetjob component has its own options.
		{[]string{"--gres=gpu:mem:5g", ":", "--gres=gpu:mem:6g", "true"}, 1, ""},
		{[]string{"--gres=gpu:mem:5g", ":", "--gres=gpu:mem:6g", "--gres=shard:1", "true"}, 1,
			"gpumem: you gave --gres 2 times (--gres=gpu:mem:6g --gres=shard:1), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:6g,shard:1"},
		// After --, the arguments are the user's program's.
		{[]string{"--gres=gpu:mem:5g", "--", "prog", "--gres=x"}, 0, ""},
	} {
		if got := repeatedGres(c.args, c.comp); got != c.want {
			t.Errorf("%v (component %d):\n got %q\nwant %q", c.args, c.comp, got, c.want)
		}
	}
}
