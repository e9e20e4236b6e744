//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmrel"
)

// TestRequestLandsWhereItFits: a size only one model holds, and a partition of one
// model, land there; a request sent to the MIG node gets the smallest MIG instance whose
// real memory (not its name) holds it.
func TestRequestLandsWhereItFits(t *testing.T) {
	g := readGres(t)
	cases := []struct {
		name, partition, gres, node, tres string
		extra                             []string
	}{
		{"only the H100s hold 60g", "", "gpu:mem:60g", "n1", "shard:60", nil},
		{"the inference partition is the L4s", "inference", "gpu:mem:20g", "n3", "shard:20", nil},
		{"4g: 1g.5gb (4864 MiB) holds it", "train", "gpu:mem:4g", "n2", "gpu:1g.5gb:1", []string{"-w", "n2"}},
		{"5g: 1g.5gb is 4864 MiB, too small, so 2g.10gb", "train", "gpu:mem:5g", "n2", "gpu:2g.10gb:1", []string{"-w", "n2"}},
		{"15g: 3g.20gb", "train", "gpu:mem:15g", "n2", "gpu:3g.20gb:1", []string{"-w", "n2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clean(t)
			args := []string{"srun", "--gres=" + c.gres}
			if c.partition != "" {
				args = append(args, "-p", c.partition)
			}
			args = append(args, c.extra...)
			r := slurm(t, 60*time.Second, "", append(args, "bash", "-c", inJob)...)
			if r.code != 0 {
				t.Fatalf("%s: %s", strings.Join(args, " "), r)
			}
			j := jobFromOutput(t, g, r.out)
			if j.node != c.node || j.tresPerNode != tresPrefix()+c.tres {
				t.Fatalf("%s landed on %s as %s; want %s as %s%s", c.gres, j.node, j.tresPerNode, c.node, tresPrefix(), c.tres)
			}
			want := atoi(t, strings.TrimSuffix(strings.TrimPrefix(c.gres, "gpu:mem:"), "g"))
			if !holds(t, j, want) {
				t.Fatalf("%s: allocation %+v holds less than asked", c.gres, j.uses)
			}
		})
	}
}

// TestRefusedAtOnce: what can never run and what is malformed is refused at submit,
// with a message that says why; nothing is left pending.
func TestRefusedAtOnce(t *testing.T) {
	cases := []struct{ gres, partition, says string }{
		{"gpu:mem:500g", "", "you asked for --gres=gpu:mem:500g, but the largest GPU in partition gpu has "},
		{"gpu:mem:30g", "inference", "partition inference"},
		{"gpu:mem:abc", "", `gpu:mem:abc" has a bad size`},
		{"gpu:mem:0", "", `gpu:mem:0" has a bad size`},
		{"gpu:mem:0g", "", `gpu:mem:0g`},
		{"gpu:mem:-1g", "", `gpu:mem:-1g" has a bad size: is negative`},
		{"gpu:mem:99999999999999999999g", "", "is larger than"},
		{"gpu:mem:18446744073709551617", "", "gpu:mem:18446744073709551617"},
		{"gpu:mem:20x", "", `unknown unit "x"`},
	}
	for _, c := range cases {
		for _, cmd := range []string{"srun", "sbatch", "salloc"} {
			args := []string{"--gres=" + c.gres}
			if c.partition != "" {
				args = append(args, "-p", c.partition)
			}
			refusedAtSubmit(t, cmd, args, c.says)
		}
	}
}

// refusedAtSubmit runs cmd (srun, sbatch or salloc) with args in a subtest and checks
// that it is refused at once, saying says, never naming a job_desc field, and leaving no
// job behind.
func refusedAtSubmit(t *testing.T, cmd string, args []string, says string) {
	t.Run(cmd+" "+strings.Join(args, " "), func(t *testing.T) {
		clean(t)
		args := append([]string{cmd}, args...)
		if cmd == "sbatch" {
			args = append(args, "--wrap", "true")
		} else {
			args = append(args, "true")
		}
		r := slurm(t, 30*time.Second, "", args...)
		if r.code == 0 {
			t.Fatalf("%s was accepted: %s", strings.Join(args, " "), r)
		}
		if !strings.Contains(r.err, says) || strings.Contains(r.err, "tres_per") {
			t.Errorf("%s: the user reads\n%s\nwant it to say %q", strings.Join(args, " "), r.err, says)
		}
		if r.took > 5*time.Second {
			t.Errorf("%s: refused only after %v", strings.Join(args, " "), r.took)
		}
		if q := strings.TrimSpace(ok(t, "squeue", "-h", "-o", "%i %b")); q != "" {
			t.Errorf("a refused request left jobs behind: %s", q)
		}
	})
}

// logRefusals has the plugins log at info, where gpumem logs a job_modify refusal, until
// the test ends: the lab's gpumem.conf says LogLevel = error. Only 22.05 needs it, where
// the log is the one place the reason goes.
func logRefusals(t *testing.T) {
	t.Helper()
	if has(slurmrel.JobModifyErrMsg) {
		return
	}
	path := ctldConf("gpumem.conf")
	was, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info := strings.Replace(string(was), "LogLevel = error", "LogLevel = info", 1)
	if info == string(was) {
		t.Fatalf("%s has no LogLevel = error line, as the lab writes it", path)
	}
	put := func(b []byte) {
		tmp := filepath.Join(filepath.Dir(path), ".gpumem.conf.e2e")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	put([]byte(info))
	t.Cleanup(func() { put(was) }) // only how much is logged: no need to wait for it
	time.Sleep(labReloadInterval + 500*time.Millisecond)
}

// TestScontrolUpdate: job_modify translates gpu:mem and refuses what cannot fit, for a
// pending job changed with scontrol.
func TestScontrolUpdate(t *testing.T) {
	clean(t)
	logRefusals(t)
	id := sbatch(t, "--hold", "--gres=gpu:mem:20g", "--wrap", "true")
	mark := ctldLogMark()
	r := slurm(t, 30*time.Second, "", "scontrol", "update", "job="+id, "TresPerNode="+tresPrefix()+"gpu:mem:500g")
	// 22.05's job_modify has no err_msg: there the user sees only Slurm's own error, and
	// gpumem's reason goes to the slurmctld log.
	if r.code == 0 || has(slurmrel.JobModifyErrMsg) && !strings.Contains(r.out+r.err, "500") {
		t.Errorf("scontrol update to gpu:mem:500g: want a refusal naming the size, got %s", r)
	}
	if !has(slurmrel.JobModifyErrMsg) && ctldLogWait(t, mark, "job_modify refused", "up to gpu:mem:80g per GPU") == "" {
		t.Errorf("22.05, scontrol update to gpu:mem:500g: no refusal in the slurmctld log:\n%s", ctldLogSince(t, mark))
	}
	ok(t, "scontrol", "update", "job="+id, "TresPerNode="+tresPrefix()+"gpu:mem:30g")
	g := readGres(t)
	if j := showJob(t, g, id); j.tresPerNode != tresPrefix()+"shard:30" {
		t.Errorf("after scontrol update to gpu:mem:30g, TresPerNode=%s; want %sshard:30", j.tresPerNode, tresPrefix())
	}
	clean(t)
}

// TestScontrolUpdateKnowsTheJob: job_modify decides a change with the job as it is. A
// new size is translated for the job's own nodes (a job held to the MIG node stays MIG,
// which 22.05 also requires), a size it cannot have there is refused, and a move to a
// partition where its GRES can never run is refused at update time instead of pending
// forever. 22.05's job_modify has no message for the user: there only Slurm's error
// code's text is read, and gpumem's reason goes to the slurmctld log.
func TestScontrolUpdateKnowsTheJob(t *testing.T) {
	clean(t)
	logRefusals(t)
	g := readGres(t)
	p := tresPrefix()
	id := sbatch(t, "--hold", "-w", "n2", "--gres=gpu:mem:8g", "--wrap", "true")
	if j := showJob(t, g, id); j.tresPerNode != p+"gpu:2g.10gb:1" {
		t.Fatalf("-w n2 gpu:mem:8g became %s; want %sgpu:2g.10gb:1", j.tresPerNode, p)
	}
	ok(t, "scontrol", "update", "job="+id, "gres=gpu:mem:15g")
	if j := showJob(t, g, id); j.tresPerNode != p+"gpu:3g.20gb:1" {
		t.Errorf("after update gres=gpu:mem:15g the job held to n2 has %s; want %sgpu:3g.20gb:1", j.tresPerNode, p)
	}
	mark := ctldLogMark()
	r := slurm(t, 30*time.Second, "", "scontrol", "update", "job="+id, "gres=gpu:mem:30g")
	if r.code == 0 || has(slurmrel.JobModifyErrMsg) && !strings.Contains(r.out+r.err, "on node n2") {
		t.Errorf("update gres=gpu:mem:30g of a job held to n2: want a refusal naming n2, got %s", r)
	}
	if !has(slurmrel.JobModifyErrMsg) && ctldLogWait(t, mark, "job_modify refused", "on node n2") == "" {
		t.Errorf("22.05, update gres=gpu:mem:30g of a job held to n2: no line naming n2 in the slurmctld log:\n%s", ctldLogSince(t, mark))
	}

	id = sbatch(t, "--hold", "-C", "mig", "--gres=gpu:mem:8g", "--wrap", "true")
	if j := showJob(t, g, id); j.tresPerNode != p+"gpu:2g.10gb:1" {
		t.Fatalf("-C mig gpu:mem:8g became %s; want %sgpu:2g.10gb:1", j.tresPerNode, p)
	}
	mark = ctldLogMark()
	r = slurm(t, 30*time.Second, "", "scontrol", "update", "job="+id, "partition=inference")
	reason := "which no node it may use in partition inference has"
	want := reason
	if !has(slurmrel.JobModifyErrMsg) {
		want = "Requested node configuration is not available"
		if ctldLogWait(t, mark, "job_modify refused", reason) == "" {
			t.Errorf("22.05, update partition=inference of a MIG job: no line saying %q in the slurmctld log:\n%s", reason, ctldLogSince(t, mark))
		}
	}
	if r.code == 0 || !strings.Contains(r.out+r.err, want) {
		t.Errorf("update partition=inference of a MIG job: want a refusal saying %q, got %s", want, r)
	}
	ok(t, "scontrol", "update", "job="+id, "partition=train")
	if j := showJob(t, g, id); !strings.Contains(ok(t, "scontrol", "show", "job", id), "Partition=train") || j.tresPerNode != p+"gpu:2g.10gb:1" {
		t.Errorf("update partition=train of a MIG job: %s", ok(t, "scontrol", "show", "job", id))
	}

	// Two GPUs per node only whole GPUs serve: a shard job cannot become that on 22.05.
	id = sbatch(t, "--hold", "--gres=gpu:mem:20g", "--wrap", "true")
	mark = ctldLogMark()
	r = slurm(t, 30*time.Second, "", "scontrol", "update", "job="+id, "gres=gpu:2,gpu:mem:10g")
	if !has(slurmrel.UpdateSwapsGRES) {
		if r.code == 0 {
			t.Errorf("Slurm %s, update of a shard job to two GPUs per node was accepted: %s", release, r)
		}
		reason := "submit it again with --gres=gpu:mem:10g --gpus-per-node=2"
		if has(slurmrel.JobModifyErrMsg) && !strings.Contains(r.out+r.err, reason) {
			t.Errorf("Slurm %s, update of a shard job to two GPUs per node: want a refusal saying %q, got %s", release, reason, r)
		}
		if !has(slurmrel.JobModifyErrMsg) && ctldLogWait(t, mark, "job_modify refused", reason) == "" {
			t.Errorf("Slurm %s, update of a shard job to two GPUs per node: no reason in the slurmctld log:\n%s", release, ctldLogSince(t, mark))
		}
	} else if j := showJob(t, g, id); r.code != 0 || !strings.HasPrefix(j.tresPerNode, p+"gpu:") {
		t.Errorf("update of a shard job to gpu:2,gpu:mem:10g: %s, TresPerNode=%s", r, j.tresPerNode)
	}
	clean(t)
}

// TestScontrolUpdateOfAnArray: a new gpu:mem for a pending array is decided where the
// update names the record slurmctld hands job_modify (the whole array, by its id), and
// refused with what to do where it names an array task, whose record job_modify cannot
// tell is the one named; it is never decided blind.
func TestScontrolUpdateOfAnArray(t *testing.T) {
	clean(t)
	logRefusals(t)
	g := readGres(t)
	p := tresPrefix()
	id := sbatch(t, "--hold", "--array=1-3", "--gres=gpu:mem:8g", "--wrap", "true")
	ok(t, "scontrol", "update", "jobid="+id, "gres=gpu:mem:30g")
	for _, task := range []string{"1", "2", "3"} {
		if j := showJob(t, g, id+"_"+task); j.tresPerNode != p+"shard:30" {
			t.Errorf("after update jobid=%s gres=gpu:mem:30g task %s has TresPerNode=%s; want %sshard:30", id, task, j.tresPerNode, p)
		}
	}
	mark := ctldLogMark()
	r := slurm(t, 30*time.Second, "", "scontrol", "update", "jobid="+id+"_2", "gres=gpu:mem:10g")
	reason := "named by its plain job id"
	if r.code == 0 || has(slurmrel.JobModifyErrMsg) && !strings.Contains(r.out+r.err, reason) {
		t.Errorf("update jobid=%s_2 gres=gpu:mem:10g: want a refusal saying %q, got %s", id, reason, r)
	}
	if !has(slurmrel.JobModifyErrMsg) && ctldLogWait(t, mark, "job_modify refused", reason) == "" {
		t.Errorf("22.05, update of an array task: no refusal in the slurmctld log:\n%s", ctldLogSince(t, mark))
	}
	if j := showJob(t, g, id+"_2"); j.tresPerNode != p+"shard:30" {
		t.Errorf("a refused update changed task 2: TresPerNode=%s; want %sshard:30", j.tresPerNode, p)
	}
	clean(t)
}

// TestOtherRequestsUntouched: jobs without gpu:mem reach Slurm exactly as typed.
func TestOtherRequestsUntouched(t *testing.T) {
	clean(t)
	g := readGres(t)
	for _, gres := range []string{"shard:7", "gpu:l4:1", "gpu:1", "shard:h100:3"} {
		id := sbatch(t, "--hold", "--gres="+gres, "--wrap", "true")
		if j := showJob(t, g, id); j.tresPerNode != tresPrefix()+gres {
			t.Errorf("--gres=%s reached Slurm as %s", gres, j.tresPerNode)
		}
	}
	id := sbatch(t, "--hold", "--wrap", "true")
	if j := showJob(t, g, id); j.tresPerNode != "" {
		t.Errorf("a job without --gres got TresPerNode=%s", j.tresPerNode)
	}
	clean(t)
}

var suggestionRE = regexp.MustCompile(`up to (gpu:mem:\S+?) per GPU fits`)

// TestRefusalSuggestionFits: the size a refusal says would fit really runs there.
func TestRefusalSuggestionFits(t *testing.T) {
	for _, p := range []string{"gpu", "inference", "train"} {
		t.Run(p, func(t *testing.T) {
			clean(t)
			r := slurm(t, 30*time.Second, "", "srun", "-p", p, "--gres=gpu:mem:900g", "true")
			m := suggestionRE.FindStringSubmatch(r.err)
			if r.code == 0 || m == nil {
				t.Fatalf("gpu:mem:900g in %s: want a refusal that suggests a size, got %s", p, r)
			}
			if r := slurm(t, 60*time.Second, "", "srun", "-p", p, "--gres="+m[1], "true"); r.code != 0 {
				t.Errorf("the refusal suggested %s in %s, which does not run: %s", m[1], p, r)
			}
		})
	}
}
