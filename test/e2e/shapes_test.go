//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// The request shapes of the translation issue: every one runs, or is refused at submit
// with the reason, and nothing is left pending that can never start.

// startsConcurrently waits until at least want jobs run at once (checking after each
// look that no device is promised more than it has) and returns how many did.
func startsConcurrently(t *testing.T, g labGres, want int) int {
	t.Helper()
	most := 0
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		js := running(t, g)
		checkNoOvercommit(t, g, js)
		most = max(most, len(js))
		if most >= want || t.Failed() {
			break
		}
	}
	return most
}

// TestShapeArrayRunsConcurrently: an array of 50 small tasks is not queued behind the
// one MIG instance that holds 5g: as many tasks run at once as the lab's CPUs and shards
// allow (n1 and n3 have 16 CPUs each, and hold 30 and 16 such slices).
func TestShapeArrayRunsConcurrently(t *testing.T) {
	clean(t)
	g := readGres(t)
	id := sbatch(t, "--array=0-49", "--gres=gpu:mem:5g", "--wrap", "sleep 120")
	n := startsConcurrently(t, g, 30)
	t.Logf("array %s: %d of 50 tasks running at once", id, n)
	if n < 30 {
		t.Errorf("only %d array tasks ran at once; the lab has room for 30", n)
	}
	clean(t)
}

// TestShapeBurstRunsConcurrently: 60 alike jobs submitted at once spread over the
// shared GPUs instead of one MIG instance. The lab runs 28 of them at once: n1's 16 CPUs
// (its H100s hold 22 such slices) and n3's 12 slices (three per L4).
func TestShapeBurstRunsConcurrently(t *testing.T) {
	clean(t)
	g := readGres(t)
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := slurm(t, 60*time.Second, "", "sbatch", "--output=/dev/null", "--gres=gpu:mem:7g", "--wrap", "sleep 120"); r.code != 0 {
				t.Errorf("sbatch --gres=gpu:mem:7g: %s", r)
			}
		}()
	}
	wg.Wait()
	n := startsConcurrently(t, g, 28)
	t.Logf("burst: %d of 60 jobs running at once", n)
	if n < 28 {
		t.Errorf("only %d of 60 burst jobs ran at once; the lab has room for 28", n)
	}
	clean(t)
}

// TestShapeRuns: shapes that used to pend or fail run now.
func TestShapeRuns(t *testing.T) {
	for _, args := range [][]string{
		{"-N2", "--gres=gpu:mem:10g"},
		{"-w", "n3", "--gres=gpu:mem:8g"},
		{"-w", "n[1,3]", "--gres=gpu:mem:8g"},
		{"-x", "n1", "--gres=gpu:mem:19g"},
		{"-C", "l4", "--gres=gpu:mem:10g"},
		{"-C", "h100|l4", "-N2", "--gres=gpu:mem:10g"},
		{"--gres=gpu:mem:5g", ":", "--gres=gpu:mem:6g"},
		// Components run on nodes of their own: the third takes the MIG node's 1g.5gb.
		{"--gres=gpu:mem:5g", ":", "--gres=gpu:mem:6g", ":", "--gres=gpu:mem:4g"},
		// The component only n1 holds first: the one that may run anywhere then keeps off it.
		{"--gres=gpu:mem:19g", "-p", "train", "-C", "h100|l4", "--gpus-per-node=2", ":", "--gres=gpu:mem:4g", "-p", "gpu,inference"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			clean(t)
			cmd := append([]string{"srun"}, args...)
			r := slurm(t, 60*time.Second, "", append(cmd, "true")...)
			if r.code != 0 {
				t.Errorf("%s: %s", strings.Join(cmd, " "), r)
			}
		})
	}
}

// TestShapeRefused: what no form can serve is refused at submit, in the user's words,
// with the node or limit at fault.
func TestShapeRefused(t *testing.T) {
	cases := []struct {
		args []string
		says string
	}{
		{[]string{"-w", "n3", "--gres=gpu:mem:30g"}, "on node n3 the GPUs are NVIDIA L4"},
		{[]string{"-x", "n1", "--gres=gpu:mem:30g"}, "--exclude=n1"},
		{[]string{"--gpus=3", "--gres=gpu:mem:30g"}, "the most that fits for 3 GPUs is gpu:mem:"},
		{[]string{"-p", "inference", "--gres=gpu:mem:23035m"}, "you asked for --gres=gpu:mem:23035m, but the largest GPU in partition inference has 22.4 GiB = "},
		{[]string{"--gpus-per-node=l4:1", "--gres=gpu:mem:30g"}, "(NVIDIA L4)"},
		{[]string{"--gres=gpu:mem:20g,shard:3"}, "cannot be combined with --gres=shard:3"},
		{[]string{"--gres=gpu:mem:20g", "--gres=shard:3"}, "you gave --gres 2 times (--gres=gpu:mem:20g --gres=shard:3)"},
		{[]string{"-C", "h100", "-N2", "--gres=gpu:mem:10g"}, "fewer than 2 nodes"},
		{[]string{"--gres=gpu:mem:5g", ":", "--gres=gpu:mem:5g", ":", "--gres=gpu:mem:5g", ":", "--gres=gpu:mem:5g"}, "heterogeneous job"},
		// Slurm starts the first component first, on n1, and the second, which only n1
		// holds, then never starts (it used to be accepted and held for ever).
		{[]string{"--gres=gpu:mem:4g", "-p", "gpu,inference", ":", "--gres=gpu:mem:19g", "-p", "train", "-C", "h100|l4", "--gpus-per-node=2"},
			"the components before this one may take the nodes that can hold it (n1)"},
	}
	for _, c := range cases {
		for _, cmd := range []string{"srun", "sbatch"} {
			refusedAtSubmit(t, cmd, c.args, c.says)
		}
	}
}

// TestShapeStepOfMIGAndWholeJobs: a step asking for more memory than its MIG or
// whole-GPU job holds is refused, as in a shard job.
func TestShapeStepOfMIGAndWholeJobs(t *testing.T) {
	for _, c := range []struct{ job, step, says string }{
		{"-w n2 --gres=gpu:mem:8g", "900g", "step asks for 900 GiB of GPU memory per GPU but job"},
		{"-w n1 --gres=gpu:mem:30g --gpus-per-node=2", "200g", "step asks for 200 GiB of GPU memory per GPU but job"},
	} {
		t.Run(c.job, func(t *testing.T) {
			clean(t)
			args := append([]string{"salloc"}, strings.Fields(c.job)...)
			r := slurm(t, 90*time.Second, "", append(args, "bash", "-c",
				fmt.Sprintf("srun --gres=gpu:mem:%s true; echo rc=$?; srun --gres=gpu:mem:1g true; echo small=$?", c.step))...)
			if !strings.Contains(r.err, c.says) || !strings.Contains(r.out, "rc=1") || !strings.Contains(r.out, "small=0") {
				t.Errorf("salloc %s, step gpu:mem:%s: %s\nwant the step refused with %q and a small step run", c.job, c.step, r, c.says)
			}
		})
	}
}

// TestShapeScriptRepeatsGres: a batch script whose #SBATCH lines give --gres twice, one a
// gpu:mem, is refused at submit whichever comes last (sbatch would keep only that one),
// read from stdin as from a file; one --gres in the script still runs.
func TestShapeScriptRepeatsGres(t *testing.T) {
	clean(t)
	for _, lines := range [][2]string{{"--gres=gpu:mem:20g", "--gres=shard:3"}, {"--gres=shard:3", "--gres gpu:mem:20g"}} {
		script := "#!/bin/sh\n#SBATCH --output=/dev/null\n#SBATCH " + lines[0] + "\n#SBATCH " + lines[1] + "\ntrue\n"
		r := slurm(t, 30*time.Second, script, "sbatch")
		if r.code == 0 || !strings.Contains(r.err, "you gave --gres 2 times in the script's #SBATCH lines") ||
			!strings.Contains(r.err, "write them as one option: --gres=") {
			t.Errorf("script with #SBATCH %s and #SBATCH %s: %s", lines[0], lines[1], r)
		}
	}
	// A heterogeneous job's components each have their own --gres.
	r := slurm(t, 30*time.Second, "#!/bin/sh\n#SBATCH --output=/dev/null --gres=gpu:mem:5g\n#SBATCH hetjob\n#SBATCH --gres=gpu:mem:6g\n#SBATCH --gres=shard:1\ntrue\n", "sbatch")
	if r.code == 0 || !strings.Contains(r.err, "(--gres=gpu:mem:6g --gres=shard:1)") {
		t.Errorf("hetjob script repeating --gres in its second component: %s", r)
	}
	r = slurm(t, 30*time.Second, "#!/bin/sh\n#SBATCH --output=/dev/null\n#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres-flags=enforce-binding\ntrue\n", "sbatch")
	if r.code != 0 {
		t.Errorf("one --gres and --gres-flags: %s", r)
	}
	clean(t)
}

// TestShapeHetjobComponentsInTwoPartitions: backfill plans a job once per partition it
// names, and each plan of a heterogeneous component holds its nodes until the whole job
// can start. Two 4g components, the first in train,inference (n1 or n3) and the second in
// gpu,inference, pended for ever on an idle 24.11 lab: the first's two plans held n1 and
// n3 both. gpumem gives each component one partition, so the job starts. The first of a
// script's "#SBATCH hetjob" components looks like a job of its own to cli_filter and keeps
// both partitions: a later component only n1 and n3 hold is refused, naming -p.
func TestShapeHetjobComponentsInTwoPartitions(t *testing.T) {
	clean(t)
	id := sbatch(t, "--gres=gpu:mem:4g", "-p", "train,inference", ":", "--gres=gpu:mem:4g", "-p", "gpu,inference", "--wrap", "true")
	deadline := time.Now().Add(90 * time.Second)
	for strings.TrimSpace(ok(t, "squeue", "-h", "-t", "pending", "-j", id, "-o", "%i")) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("hetjob %s still pending after 90s on an idle lab:\n%s", id, ok(t, "squeue", "-j", id, "-o", "%i %P %r %b"))
		}
		time.Sleep(time.Second)
	}
	endsCompleted(t, id, time.Minute) // out of the pending queue is not yet run
	script := "#!/bin/bash\n#SBATCH --gres=gpu:mem:4g -p train,inference\n#SBATCH hetjob\n#SBATCH --gres=gpu:mem:4g -p gpu,inference -C h100|l4\ntrue\n"
	r := slurm(t, 30*time.Second, script, "sbatch", "--output=/dev/null")
	if r.code == 0 || !strings.Contains(r.err, "heterogeneous job") || !strings.Contains(r.err, "(-p)") {
		t.Errorf("script whose second component only n1 and n3 hold: %s; want a refusal naming -p", r)
	}
	clean(t)
}
