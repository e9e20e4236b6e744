//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// driverFenceNode is the node the fence tests give the driver fence: n3, whose L4s the lab
// user's jobs land on (sbatchAs).
const driverFenceNode = "n3"

// fenceLab is the lab's driver-fence hook (test/lab/fence.sh) with n3's fake NVML given
// the per-cgroup limit functions and the fake cgroup2 root the dmem controller: what a
// node with a new driver and kernel answers. The lab has no Slurm cgroup plugin, so a
// test makes each job's cgroup directory itself, where Slurm's cgroup/v2 would.
type fenceLab struct {
	lab, cgRoot, scope, limitLog string
}

func setupFence(t *testing.T) *fenceLab {
	t.Helper()
	if os.Getenv("LAB_CONFIGLESS") == "1" {
		t.Skip("the fence hook reads the node inventory from /etc/slurm/gpumem.d, which a configless lab does not have")
	}
	ensureLabUser(t)
	clean(t)
	f := &fenceLab{lab: "/var/lib/gpumem-lab/" + release}
	f.cgRoot = f.lab + "/fence/cgroup"
	f.scope = f.cgRoot + "/system.slice/slurmstepd.scope"
	f.limitLog = f.lab + "/fence/limits.log"
	fake := hostPath(f.lab + "/nodes/" + driverFenceNode + ".json")
	orig, err := os.ReadFile(fake)
	if err != nil {
		t.Fatal(err)
	}
	var node map[string]any
	if err := json.Unmarshal(orig, &node); err != nil {
		t.Fatal(err)
	}
	node["memory_limits"] = map[string]string{"log": f.limitLog}
	b, _ := json.Marshal(node)
	must(t, os.WriteFile(fake, b, 0o644))
	must(t, os.MkdirAll(hostPath(f.scope), 0o755))
	must(t, os.WriteFile(hostPath(f.cgRoot+"/cgroup.controllers"), []byte("cpuset cpu io memory dmem pids\n"), 0o644))
	os.Remove(hostPath(f.limitLog))
	f.inventory(t)
	t.Cleanup(func() {
		ok(t, "scancel", "--quiet", "-u", labUser)
		clean(t)
		os.WriteFile(fake, orig, 0o644)
		os.Remove(hostPath(f.cgRoot + "/cgroup.controllers"))
		f.inventory(t)
		slurm(t, 30*time.Second, "", "scontrol", "update", "nodename="+driverFenceNode, "state=resume")
	})
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// inventory has n3's gpumemd write its inventory again, as its poll would: each GPU's
// fence is what the node answers now.
func (f *fenceLab) inventory(t *testing.T) []inventory.GPU {
	t.Helper()
	ok(t, f.lab+"/bin/gpumemd", "--once", "--config", f.lab+"/gpumemd.conf", "--nvml=fake:"+f.lab+"/nodes/"+driverFenceNode+".json",
		"--node", driverFenceNode, "--write-inventory", "--inventory-dir", "/etc/slurm/gpumem.d", "--fence-cgroup-root", f.cgRoot)
	c, err := inventory.LoadPath(ctldConf("gpumem.d/" + driverFenceNode + ".json"))
	if err != nil || len(c.Nodes) != 1 {
		t.Fatalf("%s's inventory: %v", driverFenceNode, err)
	}
	return c.Nodes[0].GPUs
}

// heldJob submits a job as the lab user, held, so its cgroup can be made before it
// runs; the script first copies the fake driver's state and its recorded fence where
// the test reads them: what the job's first code sees.
func (f *fenceLab) heldJob(t *testing.T, extra ...string) (id, seen string) {
	t.Helper()
	// One line: the test reads the job's record with `scontrol -o`, which a line
	// break in the command would split.
	script := fmt.Sprintf(`cat %s > /tmp/gpumem-fence-seen-$SLURM_JOB_ID 2>&1; cat %s/fence/state/$SLURM_JOB_ID >> /tmp/gpumem-fence-seen-$SLURM_JOB_ID 2>&1; `+
		`mkdir %s/job_$SLURM_JOB_ID/mine 2>/dev/null && echo MADE-A-SUBCGROUP >> /tmp/gpumem-fence-seen-$SLURM_JOB_ID; srun --export=NONE true; `+
		// It then waits (bounded) for the test to have read its allocation.
		`for i in $(seq 300); do [ -e /tmp/gpumem-fence-go-$SLURM_JOB_ID ] && break; sleep 0.2; done; true`, f.limitLog, f.lab, f.scope)
	args := append([]string{"--hold", "--output=/dev/null", "--wrap", script}, extra...)
	id = sbatchAs(t, args...)
	seen = hostPath("/tmp/gpumem-fence-seen-" + id)
	os.Remove(seen)
	t.Cleanup(func() { os.Remove(seen); os.Remove(hostPath("/tmp/gpumem-fence-go-" + id)) })
	return id, seen
}

// letGo lets job id's script end.
func letGo(t *testing.T, id string) {
	t.Helper()
	must(t, os.WriteFile(hostPath("/tmp/gpumem-fence-go-"+id), nil, 0o644))
}

// allocatedGPU is the GPU of n3 Slurm gave job id, from Slurm's own record.
func allocatedGPU(t *testing.T, id string) int {
	t.Helper()
	out := ok(t, "scontrol", "-d", "-o", "show", "job", id)
	js := slurmcli.ParseJobsText(out)
	if len(js.Jobs) != 1 || len(js.Jobs[0].Uses) != 1 {
		t.Fatalf("job %s: want one GPU in its record:\n%s", id, out)
	}
	return js.Jobs[0].Uses[0].GPU
}

func waitGone(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		if strings.TrimSpace(slurm(t, 30*time.Second, "", "squeue", "-h", "-j", id, "-o", "%T").out) == "" {
			return
		}
	}
	t.Fatalf("job %s still queued after 60s", id)
}

// gpumemd's prolog sets the shard job's slice as the hard limit on the job's cgroup, as
// root, before the job's first code runs; the epilog clears it. 24.11 and 26.05 run it
// as the Prolog (PrologFlags=RunInJob); 22.05, whose Prolog runs before the job's cgroup
// exists, through gpumem's SPANK plugin in the extern step (PrologFlags=Contain).
func TestFenceDriverLimitBeforeTheJobRuns(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	gpus := f.inventory(t)
	want := inventory.FenceDriver
	for _, g := range gpus {
		if g.FenceOf() != want {
			t.Fatalf("%s GPU %d says fence %q; want %q on %s", driverFenceNode, g.Index, g.FenceOf(), want, release)
		}
	}
	// Everything the user controls about the job, aimed at the limit: another job id,
	// node and device list in the environment; the script tries a sub-cgroup and a step
	// with other options.
	id, seen := f.heldJob(t, "--export=ALL,SLURM_JOB_ID=1,SLURMD_NODENAME=n1,CUDA_VISIBLE_DEVICES=3,SLURM_SHARDS_ON_NODE=20,GPUMEM_CONF=/tmp/x")
	dir := f.scope + "/job_" + id
	must(t, os.MkdirAll(hostPath(dir), 0o755))
	t.Cleanup(func() { os.RemoveAll(hostPath(dir)) })
	ok(t, "scontrol", "release", id)
	waitState(t, id, "RUNNING")
	gpu := allocatedGPU(t, id)
	letGo(t, id)
	waitGone(t, id)
	sawB, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the job's script left nothing: %v", err)
	}
	saw := string(sawB)
	if strings.Contains(saw, "MADE-A-SUBCGROUP") {
		t.Errorf("the lab user made a cgroup below the job's")
	}
	calls, err := nvmlsrc.ReadFakeLimits(hostPath(f.limitLog))
	if err != nil {
		t.Fatal(err)
	}
	var mine []nvmlsrc.FakeLimitCall
	for _, c := range calls {
		if c.Namespace == dir {
			mine = append(mine, c)
		} else {
			t.Errorf("a limit on %s, not job %s's cgroup: %+v", c.Namespace, id, c)
		}
	}
	// One set (4 GiB on the GPU Slurm gave the job, by root) before the script ran;
	// after it, the epilog's clears (every driver GPU of the node, whatever the job
	// held); the step set nothing.
	var sets, clears []nvmlsrc.FakeLimitCall
	for _, c := range mine {
		if c.Hard == nvml.DEVICE_MEMORY_LIMIT_MAX && c.Soft == 0 {
			clears = append(clears, c)
		} else {
			sets = append(sets, c)
		}
	}
	if len(sets) != 1 || sets[0].GPU != gpu || sets[0].Hard != 4<<30 || sets[0].Soft != 0 || sets[0].EUID != 0 ||
		len(clears) != len(gpus) || mine[0] != sets[0] {
		t.Fatalf("limit calls for job %s (GPU %d): %+v; want one 4 GiB hard limit set by root, then a clear on each of the %d GPUs", id, gpu, mine, len(gpus))
	}
	firstLine, _, _ := strings.Cut(saw, "\n")
	var first nvmlsrc.FakeLimitCall
	if err := json.Unmarshal([]byte(firstLine), &first); err != nil || first.Namespace != sets[0].Namespace || first.Hard != 4<<30 {
		t.Fatalf("the job's first code saw %q; want the limit already set", saw)
	}
	if !strings.Contains(saw, "\ndriver\n") {
		t.Errorf("the job could not read its fence (driver) from the prolog's record: %q", saw)
	}
	if _, err := os.Stat(hostPath(f.lab + "/fence/state/" + id)); err == nil {
		t.Errorf("the fence record of job %s outlived it", id)
	}
	if c, left := nvmlsrc.CurrentFakeLimit(calls, gpu, sets[0].Namespace); left {
		t.Errorf("limit left after the job: %+v", c)
	}
}

// A node that said it fences and cannot set a job's limit never runs the job there
// unfenced: the prolog fails (counted); on 24.11 and 26.05 Slurm holds the job off the
// node, on 22.05 (SPANK) `gpumemd fence-check` fails the job's steps before their tasks.
func TestFenceFailureNeverRunsTheJobUnfenced(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	failures := hostPath(f.lab + "/fence/failures.log")
	os.Remove(failures)
	// No cgroup directory for the job: the prolog cannot prove or reach it.
	id, seen := f.heldJob(t)
	ok(t, "scontrol", "release", id)
	var state, reason string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		b, _ := os.ReadFile(failures)
		if strings.Contains(string(b), "job "+id+" ") {
			break
		}
	}
	b, _ := os.ReadFile(failures)
	if !strings.Contains(string(b), "job "+id+" on "+driverFenceNode+": driver fence not set") {
		t.Fatalf("failure not counted for job %s: %q", id, b)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		out := strings.TrimSpace(slurm(t, 30*time.Second, "", "squeue", "-h", "-j", id, "-o", "%T %r").out)
		state, reason, _ = strings.Cut(out, " ")
		if state != "RUNNING" && state != "CONFIGURING" {
			break
		}
	}
	node := ok(t, "scontrol", "show", "node", driverFenceNode, "-o")
	t.Logf("%s after a failed fence: job %s %q (%s); node: %s", release, id, state, reason, node[strings.Index(node, "State="):])
	if _, err := os.Stat(seen); err == nil {
		b, _ := os.ReadFile(seen)
		t.Fatalf("job %s ran its script without its fence: %q", id, b)
	}
}

// needFenceHook skips unless the lab's slurm.conf runs gpumemd's hooks (LAB_FENCE=1
// test/lab/lab.sh up): the hook is opt-in in the lab (test/lab/fence.sh).
func needFenceHook(t *testing.T) {
	t.Helper()
	if !strings.Contains(ok(t, "scontrol", "show", "config"), "gpumemd-epilog") {
		t.Skip("this lab runs without gpumemd's prolog: LAB_FENCE=1 installs the fence hook")
	}
}
