//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reconfigure has slurmctld read its configuration again (from 23.11 on, by restarting
// itself) and waits until it answers and gpumem's loader has looked at its files.
func reconfigure(t *testing.T) {
	t.Helper()
	ok(t, "scontrol", "reconfigure")
	if !eventually(60*time.Second, func() bool { return slurm(t, 30*time.Second, "", "scontrol", "ping").code == 0 }) {
		t.Fatal("slurmctld does not answer 60 s after scontrol reconfigure")
	}
	time.Sleep(labReloadInterval + 500*time.Millisecond)
}

// runsOn runs a one-task step with args and returns the node it ran on, or the refusal.
func runsOn(t *testing.T, args ...string) (string, result) {
	t.Helper()
	r := slurm(t, 60*time.Second, "", append(append([]string{"srun", "-n1"}, args...), "printenv", "SLURMD_NODENAME")...)
	return strings.TrimSpace(r.out), r
}

// TestBrokenNodeFileCostsThatNode: n1's inventory file cut in half, and slurmctld
// reconfigured (restarted from 23.11 on). gpu:mem jobs for the other nodes still translate
// and run, none lands on n1, one held to n1 is refused with a reason naming it; with the
// file back, n1 takes gpu:mem jobs again.
func TestBrokenNodeFileCostsThatNode(t *testing.T) {
	clean(t)
	path := ctldConf(filepath.Join("gpumem.d", "n1.json"))
	was, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the lab's file back, after a test that stopped half-way
		if cur, _ := os.ReadFile(path); bytes.Equal(cur, was) {
			return
		}
		if err := os.WriteFile(path, was, 0o644); err != nil {
			t.Error(err)
		}
		reconfigure(t)
	})
	if err := os.WriteFile(path, was[:len(was)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	mark := ctldLogMark()
	reconfigure(t)
	if ctldLogWait(t, mark, "n1.json", "skipped, the rest is used") == "" {
		t.Errorf("no line naming the broken n1.json in the slurmctld log:\n%s", ctldLogSince(t, mark))
	}

	if node, r := runsOn(t, "-p", "inference", "--gres=gpu:mem:20g"); r.code != 0 || node != "n3" {
		t.Errorf("with n1's file broken, -p inference gpu:mem:20g: want it run on n3, got %s", r)
	}
	for i := 0; i < 3; i++ {
		if node, r := runsOn(t, "-p", "train", "--gres=gpu:mem:10g"); r.code != 0 || node != "n2" {
			t.Errorf("with n1's file broken, -p train gpu:mem:10g: want it run on n2 (n1 unknown to gpumem), got %s", r)
		}
	}
	// The client reads the same files and refuses first; a client without gpumem.conf
	// leaves the request to slurmctld, which must say the same.
	for _, client := range []string{"with", "without"} {
		if client == "without" {
			t.Setenv("GPUMEM_CONF", "/nonexistent/gpumem.conf")
		}
		if _, r := runsOn(t, "-w", "n1", "--gres=gpu:mem:20g"); r.code == 0 || !strings.Contains(r.err, "node n1 has no GPU gpumem knows") {
			t.Errorf("with n1's file broken, -w n1 gpu:mem:20g, %s the client's gpumem.conf: want a refusal saying n1 has no GPU gpumem knows, got %s", client, r)
		}
		if _, r := runsOn(t, "--gres=gpu:mem:60g"); r.code == 0 || !strings.Contains(r.err, "the largest GPU in partition gpu has 40 GiB") {
			t.Errorf("with n1's file broken, gpu:mem:60g (only n1's H100s hold it), %s the client's gpumem.conf: want a refusal naming the largest GPU left, got %s", client, r)
		}
	}
	os.Unsetenv("GPUMEM_CONF")

	if err := os.WriteFile(path, was, 0o644); err != nil {
		t.Fatal(err)
	}
	reconfigure(t)
	if node, r := runsOn(t, "--gres=gpu:mem:60g"); r.code != 0 || node != "n1" {
		t.Errorf("n1's file back, gpu:mem:60g: want it run on n1, got %s", r)
	}
}

// TestClientBrokenConfig: a client whose gpumem.conf is broken. With OnError = open (the
// lab's) it leaves gpu:mem to slurmctld: a request that fits is translated there, and one
// that does not is refused with the reason the client gives with a good gpumem.conf, on
// one line, said once. With OnError = closed the client stops with one line naming the
// broken key.
func TestClientBrokenConfig(t *testing.T) {
	clean(t)
	conf, err := os.ReadFile(ctldConf("gpumem.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conf), "OnError = open") {
		t.Fatalf("the lab's gpumem.conf has no OnError = open line:\n%s", conf)
	}
	noFit := []string{"sbatch", "--output=/dev/null", "--hold", "-w", "n2", "--gres=gpu:mem:30g", "--wrap", "true"}
	good := slurm(t, 30*time.Second, "", noFit...)
	want := gpumemLines(good.err)
	if good.code == 0 || len(want) != 1 || !strings.Contains(want[0], "on node n2") {
		t.Fatalf("with the lab's gpumem.conf, -w n2 gpu:mem:30g: want one gpumem line naming n2, got %s", good)
	}
	broken := labDir() + "/gpumem-broken.conf"
	t.Cleanup(func() { os.Remove(hostPath(broken)) })
	t.Setenv("GPUMEM_CONF", broken)
	for _, onError := range []string{"open", "closed"} {
		body := strings.Replace(string(conf), "OnError = open", "OnError = "+onError, 1) + "ShardUnit = lots\n"
		if err := os.WriteFile(hostPath(broken), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		r := slurm(t, 30*time.Second, "", "sbatch", "--output=/dev/null", "--hold", "--gres=gpu:mem:20g", "--wrap", "true")
		if onError == "open" {
			m := submittedRE.FindStringSubmatch(r.out)
			if r.code != 0 || r.err != "" || m == nil {
				t.Fatalf("broken client gpumem.conf, OnError = open, gpu:mem:20g: want it submitted silently, got %s", r)
			}
			if j := showJob(t, readGres(t), m[1]); j.tresPerNode != tresPrefix()+"shard:20" {
				t.Errorf("broken client gpumem.conf, OnError = open: slurmctld made gpu:mem:20g %s; want %sshard:20", j.tresPerNode, tresPrefix())
			}
			r = slurm(t, 30*time.Second, "", noFit...)
			if got := gpumemLines(r.err); r.code == 0 || len(got) != 1 || got[0] != want[0] || strings.Contains(r.err, "\n\n") {
				t.Errorf("broken client gpumem.conf, OnError = open, -w n2 gpu:mem:30g: want slurmctld's refusal once, as the client words it (%q), got %s", want[0], r)
			}
			continue
		}
		if got := gpumemLines(r.err); r.code == 0 || len(got) != 1 || !strings.Contains(strings.ToLower(got[0]), "shardunit") || strings.Contains(r.err, "\n\n") {
			t.Errorf("broken client gpumem.conf, OnError = closed: want one gpumem line naming ShardUnit, got %s", r)
		}
	}
	clean(t)
}

// TestHetjobWithoutClient: a hetjob that reaches slurmctld untranslated (a client whose
// gpumem.conf is broken, with OnError = open, as slurmrestd or a client without gpumem
// would send it) is decided component after component by job_submit, as cli_filter
// decides it. Two 30g components, which only n1 holds, were both accepted before and
// pended for ever; now the second is refused naming n1, and 30g : 4g runs.
func TestHetjobWithoutClient(t *testing.T) {
	clean(t)
	conf, err := os.ReadFile(ctldConf("gpumem.conf"))
	if err != nil {
		t.Fatal(err)
	}
	broken := labDir() + "/gpumem-broken-het.conf"
	t.Cleanup(func() { os.Remove(hostPath(broken)) })
	body := strings.Replace(string(conf), "OnError = closed", "OnError = open", 1) + "ShardUnit = lots\n"
	if err := os.WriteFile(hostPath(broken), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUMEM_CONF", broken)
	r := slurm(t, 30*time.Second, "", "sbatch", "--output=/dev/null", "--gres=gpu:mem:30g", ":", "--gres=gpu:mem:30g", "--wrap", "true")
	if r.code == 0 || !strings.Contains(r.err, "heterogeneous job") || !strings.Contains(r.err, "(n1)") {
		t.Errorf("30g : 30g through job_submit alone: want the second component refused naming n1, got %s", r)
	}
	id := sbatch(t, "--gres=gpu:mem:30g", ":", "--gres=gpu:mem:4g", "--wrap", "true")
	deadline := time.Now().Add(90 * time.Second)
	for strings.TrimSpace(ok(t, "squeue", "-h", "-t", "pending", "-j", id, "-o", "%i")) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("30g : 4g through job_submit alone still pending after 90s:\n%s", ok(t, "squeue", "-j", id, "-o", "%i %P %r %b"))
		}
		time.Sleep(time.Second)
	}
	endsCompleted(t, id, time.Minute) // out of the pending queue is not yet run
	clean(t)
}

// gpumemLines are the lines of a command's stderr that carry gpumem's words.
func gpumemLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "gpumem") {
			out = append(out, l)
		}
	}
	return out
}
