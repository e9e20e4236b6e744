package plugin

import (
	"strings"
	"testing"
)

func TestScriptRepeats(t *testing.T) {
	twice := func(lines string) string {
		return "gpumem: you gave --gres 2 times in the script's #SBATCH " + lines + " (--gres=gpu:mem:20g --gres=shard:3), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:20g,shard:3"
	}
	for _, c := range []struct{ script, want string }{
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres=shard:3\nsrun true\n", twice("lines 2 and 3")},
		{"#!/bin/bash\n#SBATCH --gres gpu:mem:20g -p gpu\n\n# a comment\n#SBATCH   --gres='shard:3'\n", twice("lines 2 and 5")},
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g --gres=shard:3\n", twice("line 2")},
		{"#SLURM --gres=gpu:mem:20g\r\n#SBATCH\t--gres=shard:3\r\n", twice("lines 1 and 2")},
		// sbatch reads the words as getopt does: quotes and backslashes go, --gres takes
		// the next word, -J its own
		{"#SBATCH --g\"res\"=gpu:mem:20g\n#SBATCH --\\gres shard:3\n", twice("lines 1 and 2")},
		{"#SBATCH -J --gres=shard:1\n#SBATCH --gres=gpu:mem:5g\n", ""},
		{"#SBATCH -J\n#SBATCH --gres=shard:1\n#SBATCH --gres=gpu:mem:5g\n", ""},
		// sbatch stops reading options at the first command
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\necho --gres\n#SBATCH --gres=shard:3\n", ""},
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\n  \t# indented comment\n#SBATCH --gres=shard:3\n", twice("lines 2 and 4")},
		// ... and a line's words at an unquoted #, a hetjob word, or a word no option
		{"#SBATCH --gres=gpu:mem:5g # not --gres=shard:1\n", ""},
		{"#SBATCH --gres=gpu:mem:5g '#' --gres=shard:1\n", ""}, // sbatch refuses the word
		{"#SBATCH --gres=gpu:mem:20g \\# --gres=shard:3\n", ""},
		{"#SBATCH --gres=gpu:mem:5g -n1 hetjob --gres=shard:1\n", ""},
		{"#SBATCH --gres=gpu:mem:5g job.sh --gres=shard:1\n", ""},
		{"#SBATCH --gres=gpu:mem:5g \"\" --gres=shard:1\n", ""},
		{"#SBATCH --gres=gpu:mem:5g 'unmatched --gres=shard:1\n", ""},
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres-flags=enforce-binding\n", ""},
		{"#!/bin/bash\n#SBATCH --gres=shard:3\n#SBATCH --gres=gpu:2\n", ""}, // not gpumem's
		// Each component of a heterogeneous job has its own, and sbatch reads nothing
		// more of a hetjob line.
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:5g\n#SBATCH hetjob\n#SBATCH --gres=gpu:mem:6g\n", ""},
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:5g\n#SBATCH HetJob --gres=gpu:mem:6g\n#SBATCH --gres=shard:1\n", ""},
		{"#!/bin/bash\n#SBATCH --gres=gpu:mem:5g\n#SBATCH packjob\n#SBATCH --gres=gpu:mem:6g\n#SBATCH --gres=shard:1\n",
			"gpumem: you gave --gres 2 times in the script's #SBATCH lines 4 and 5 (--gres=gpu:mem:6g --gres=shard:1), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:6g,shard:1"},
		{"#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres=shard:3\n#SBATCH hetjob\n", twice("lines 1 and 2")},
		{"", ""},
	} {
		if got := ScriptRepeats(c.script, false); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.script, got, c.want)
		}
	}
}

// gpumem reads a script's first MaxScriptRead bytes: a gpu:mem job whose #SBATCH head
// runs past them is refused, and nothing past them is read.
func TestScriptReadIsBounded(t *testing.T) {
	comments := strings.Repeat("# a long header\n", MaxScriptRead/16+1)
	long := "#!/bin/bash\n" + comments + "#SBATCH --gres=gpu:mem:5g\ntrue\n"
	if got := ScriptRepeats(long, true); !strings.Contains(got, "run past its first 1 MiB") {
		t.Errorf("gpu:mem job, #SBATCH head past the bound: %q", got)
	}
	if got := ScriptRepeats(long, false); got != "" {
		t.Errorf("job without gpu:mem, #SBATCH head past the bound: %q", got)
	}
	// a long script whose #SBATCH head ends early is read as any other
	body := "#!/bin/bash\n#SBATCH --gres=gpu:mem:5g\ntrue\n" + strings.Repeat("echo --gres=shard:1\n", MaxScriptRead/20+1)
	if got := ScriptRepeats(body, true); got != "" {
		t.Errorf("long script body: %q", got)
	}
	// a repeat past the bound is never seen
	beyond := "#SBATCH --gres=gpu:mem:5g\n" + comments + "#SBATCH --gres=shard:1\ntrue\n"
	if got := ScriptRepeats(beyond, false); got != "" {
		t.Errorf("--gres again past the bound: %q", got)
	}
	if got := scriptRepeats(beyond, false, len(beyond)); !strings.Contains(got, "you gave --gres 2 times") {
		t.Errorf("--gres again, read whole: %q", got)
	}
}

// job_submit refuses a script that repeats --gres even when the last one, all its fields
// show, asks for no GPU memory.
func TestSubmitRefusesAScriptThatRepeatsGres(t *testing.T) {
	p := realPlugin(t, &logSink{})
	script := "#!/bin/bash\n#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres=shard:3\ntrue\n"
	long := "#!/bin/bash\n" + strings.Repeat("#\n", MaxScriptRead/2) + "#SBATCH --gres=gpu:mem:5g\n"
	for name, submit := range map[string]func(Fields) Verdict{"Submit": p.Submit, "SubmitPinned": p.SubmitPinned} {
		if v := submit(Fields{PerNode: "gres:shard:3", Script: script}); v.Refusal == "" {
			t.Errorf("%s: accepted %+v", name, v)
		}
		if v := submit(Fields{PerNode: "gres:shard:3", Script: "#!/bin/bash\n#SBATCH --gres=shard:3\n"}); v.Refusal != "" {
			t.Errorf("%s: refused one --gres: %s", name, v.Refusal)
		}
		if v := submit(Fields{PerNode: "gres:gpu:mem:5g", Script: long}); !strings.Contains(v.Refusal, "more than gpumem reads") {
			t.Errorf("%s: gpu:mem job with an #SBATCH head past the bound: %+v", name, v)
		}
	}
}

// A refusal names a few of what was repeated, however many there are.
func TestScriptRepeatsNamesAFew(t *testing.T) {
	script := strings.Repeat("#SBATCH --gres=gpu:mem:1g --gres=shard:1\n", 10000)
	got := ScriptRepeats(script, false)
	want := "gpumem: you gave --gres 20000 times in the script's #SBATCH lines 1, 2, 3 and 4 and more (--gres=gpu:mem:1g --gres=shard:1 --gres=gpu:mem:1g --gres=shard:1 --gres=gpu:mem:1g --gres=shard:1 --gres=gpu:mem:1g --gres=shard:1 ... 19992 more), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:1g,shard:1,gpu:mem:1g,shard:1,gpu:mem:1g,shard:1,gpu:mem:1g,shard:1 ... 19992 more"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
