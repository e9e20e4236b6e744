package plugin

import (
	"strings"
	"testing"
)

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
		if got := repeatedGres(c.args, c.comp, ""); got != c.want {
			t.Errorf("%v (component %d):\n got %q\nwant %q", c.args, c.comp, got, c.want)
		}
	}
}

func TestScriptRepeats(t *testing.T) {
	twice := "gpumem: you gave --gres 2 times in the script's #SBATCH lines (--gres=gpu:mem:20g --gres=shard:3), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:20g,shard:3"
	for _, c := range []struct{ script, want string }{
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres=shard:3\nsrun true\n", twice},
		{"#!/bin/bash\n#SBATCH --gres gpu:mem:20g -p gpu\n\n# a comment\n#SBATCH   --gres='shard:3'\n", twice},
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g --gres=shard:3\n", twice},
		// sbatch stops reading options at the first command.
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\necho --gres\n#SBATCH --gres=shard:3\n", ""},
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres-flags=enforce-binding\n", ""},
		{"#!/bin/bash\n#SBATCH --gres=shard:3\n#SBATCH --gres=gpu:2\n", ""}, // not gpumem's
		// Each component of a heterogeneous job has its own.
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:5g\n#SBATCH hetjob\n#SBATCH --gres=gpu:mem:6g\n", ""},
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:5g\n#SBATCH hetjob --gres=gpu:mem:6g\n#SBATCH --gres=shard:1\n",
			"gpumem: you gave --gres 2 times in the script's #SBATCH lines (--gres=gpu:mem:6g --gres=shard:1), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:6g,shard:1"},
		{"", ""},
	} {
		if got := ScriptRepeats(c.script); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.script, got, c.want)
		}
	}
}

// job_submit refuses a script that repeats --gres even when the last one, all its fields
// show, asks for no GPU memory.
func TestSubmitRefusesAScriptThatRepeatsGres(t *testing.T) {
	p := realPlugin(t, &logSink{})
	script := "#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres=shard:3\ntrue\n"
	for name, submit := range map[string]func(Fields) Verdict{"Submit": p.Submit, "SubmitPinned": p.SubmitPinned} {
		if v := submit(Fields{PerNode: "gres:shard:3", Script: script}); v.Refusal == "" {
			t.Errorf("%s: accepted %+v", name, v)
		}
		if v := submit(Fields{PerNode: "gres:shard:3", Script: "#!/bin/bash\n#SBATCH --gres=shard:3\n"}); v.Refusal != "" {
			t.Errorf("%s: refused one --gres: %s", name, v.Refusal)
		}
	}
}

// cli_filter's first component has offset 0, as a job of its own does: the command line's
// lone ":" says it is the first of a heterogeneous job.
func TestHetCommandLine(t *testing.T) {
	for args, want := range map[string]bool{
		"--gres=gpu:mem:4g -p train,inference : --gres=gpu:mem:4g true": true,
		"--gres=gpu:mem:4g : -n1 true":                                  true,
		"--gres=gpu:mem:4g --wrap true":                                 false,
		"--gres=gpu:mem:4g -- prog :":                                   false, // the program's own argument
		"":                                                              false,
	} {
		if got := hetCommandLine(strings.Fields(args)); got != want {
			t.Errorf("hetCommandLine(%q) = %v, want %v", args, got, want)
		}
	}
}
