//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCmdlineProgramIsNotTheJob: a command line is read as Slurm reads it, options up to
// the program: the --gres of the srun that salloc runs, a batch script's own arguments
// and a program's arguments are never the job's, so none is refused as a repeated --gres.
func TestCmdlineProgramIsNotTheJob(t *testing.T) {
	clean(t)
	script := "/tmp/gpumem-e2e-cmdline-args.sh"
	// the script checks it got its own arguments
	if err := os.WriteFile(hostPath(script), []byte("#!/bin/sh\n#SBATCH --output=/dev/null\n[ \"$1 $2\" = \"--gres=shard:1 -N\" ]\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(hostPath(script))
	for _, c := range []struct {
		args []string
		out  string // what the job prints, when it says something
	}{
		{[]string{"salloc", "-N2", "--gres=gpu:mem:10g", "srun", "-N1", "--gres=gpu:mem:5g", "true"}, ""},
		{[]string{"salloc", "-N", "1", "--gres", "gpu:mem:10g", "srun", "--gres=gpu:mem:5g", "echo", "--gres=shard:1"}, "--gres=shard:1"},
		{[]string{"sbatch", "--wait", "--gres=gpu:mem:5g", script, "--gres=shard:1", "-N"}, ""},
		{[]string{"sbatch", "--wait", "--output=/dev/null", "--gres=gpu:mem:5g", "--wrap", "srun --gres=gpu:mem:5g true"}, ""},
		{[]string{"srun", "--gres=gpu:mem:5g", "echo", "--gres=shard:1"}, "--gres=shard:1"},
		{[]string{"srun", "-J", "--gres=shard:1", "--gres=gpu:mem:5g", "true"}, ""}, // -J takes the next word
		{[]string{"srun", "--gres=gpu:mem:5g", "--", "echo", "--gres=shard:1"}, "--gres=shard:1"},
	} {
		r := slurm(t, 3*time.Minute, "", c.args...)
		if r.code != 0 || !strings.Contains(r.out, c.out) || strings.Contains(r.err, "gpumem:") {
			t.Errorf("%s: %s", strings.Join(c.args, " "), r)
		}
	}
	// a repeat among the job's own options is still refused
	r := slurm(t, time.Minute, "", "salloc", "--gres=gpu:mem:10g", "-N", "1", "--gres=shard:1", "srun", "--gres=gpu:mem:5g", "true")
	if r.code == 0 || !strings.Contains(r.err, "you gave --gres 2 times (--gres=gpu:mem:10g --gres=shard:1)") {
		t.Errorf("salloc repeating --gres before its command: %s", r)
	}
	clean(t)
}

// TestCmdlineScriptDirectives: #SBATCH words are read as sbatch reads them: a comment is
// no option, and a --gres after the first command is never read.
func TestCmdlineScriptDirectives(t *testing.T) {
	clean(t)
	for _, script := range []string{
		"#!/bin/sh\n#SBATCH --output=/dev/null\n#SBATCH --gres=gpu:mem:5g # not --gres=shard:1\ntrue\n",
		"#!/bin/sh\n#SBATCH --output=/dev/null\n#SBATCH -J --gres=shard:1\n#SBATCH --gres=gpu:mem:5g\ntrue\n",
		"#!/bin/sh\n#SBATCH --output=/dev/null\n#SBATCH --gres=gpu:mem:5g\ntrue\n#SBATCH --gres=shard:1\n",
	} {
		if r := slurm(t, 3*time.Minute, script, "sbatch", "--wait"); r.code != 0 {
			t.Errorf("%q: %s", script, r)
		}
	}
	// lines that repeat --gres are named
	r := slurm(t, time.Minute, "#!/bin/sh\n#SBATCH --output=/dev/null\n#SBATCH --gres=gpu:mem:5g\n\n#SBATCH --gres=shard:1\ntrue\n", "sbatch")
	if r.code == 0 || !strings.Contains(r.err, "in the script's #SBATCH lines 3 and 5 (--gres=gpu:mem:5g --gres=shard:1)") {
		t.Errorf("script repeating --gres on lines 3 and 5: %s", r)
	}
	clean(t)
}

// TestCmdlineLargeScriptIsPrompt: the audit's script, sent through libslurm as any user
// may: a plain job whose script has 250,000 "#SBATCH hetjob" lines between a gpu:mem
// --gres and another (3.6 MiB, under Slurm's 4 MiB default). job_submit used to read it
// in time that grew with the square of its lines (minutes here); now it reads at most
// its first MiB, once. The job is decided within a generous bound and slurmctld answers
// squeue meanwhile; a gpu:mem job with so long an #SBATCH head is refused with a reason.
func TestCmdlineLargeScriptIsPrompt(t *testing.T) {
	clean(t)
	submitter := submitterPath(t)
	path := "/tmp/gpumem-e2e-cmdline-big.sh"
	big := "#!/bin/sh\n#SBATCH --gres=gpu:mem:5g\n" + strings.Repeat("#SBATCH hetjob\n", 250000) + "#SBATCH --gres=shard:1\ntrue\n"
	if err := os.WriteFile(hostPath(path), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(hostPath(path))
	t.Setenv("GPUMEM_SUBMIT_SCRIPT", path)

	// squeue, asked every half second while the jobs are decided: its slowest answer
	ctx, stop := context.WithCancel(context.Background())
	slowest := make(chan time.Duration)
	go func() {
		var worst time.Duration
		for ctx.Err() == nil {
			args := []string{"squeue", "-h"}
			if root != "" {
				args = append([]string{"chroot", root}, args...)
			}
			start := time.Now()
			q, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			_ = exec.CommandContext(q, args[0], args[1:]...).Run()
			cancel()
			worst = max(worst, time.Since(start))
			time.Sleep(500 * time.Millisecond)
		}
		slowest <- worst
	}()
	mark := ctldLogMark()
	start := time.Now()
	r := slurm(t, 5*time.Minute, tresPrefix()+"shard:1\n"+tresPrefix()+"gpu:mem:5g\n", submitter, "--lines")
	took := time.Since(start)
	stop()
	worst := <-slowest
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("submitter: %s", r)
	}
	if id, accepted := strings.CutPrefix(lines[0], "ok "); !accepted {
		t.Errorf("plain job with the large script: %q, want it accepted (its --gres are in two components)", lines[0])
	} else if got := slurm(t, time.Minute, "", "scontrol", "write", "batch_script", id, "-").out; strings.Count(got, "#SBATCH hetjob\n") != 250000 {
		t.Fatalf("job %s holds a script of %d bytes, not the one sent: the submitter does not read GPUMEM_SUBMIT_SCRIPT", id, len(got))
	}
	if id, accepted := strings.CutPrefix(lines[1], "ok "); accepted {
		t.Errorf("gpu:mem job with a 3.6 MiB #SBATCH head: accepted, want it refused:\n%s\nslurmctld logged:\n%s",
			slurm(t, time.Minute, "", "scontrol", "show", "job", id).out, ctldLogSince(t, mark))
	} else if !strings.HasPrefix(lines[1], "refused ") {
		t.Errorf("gpu:mem job with a 3.6 MiB #SBATCH head: %q, want it refused", lines[1])
	}
	if took > time.Minute || worst > 30*time.Second {
		t.Errorf("two submissions of the large script took %v, and squeue's slowest answer meanwhile %v; want both prompt", took, worst)
	}
	t.Logf("two submissions of a 3.6 MiB script: %v; squeue's slowest answer meanwhile: %v", took, worst)
	clean(t)
}
