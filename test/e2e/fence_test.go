//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmrel"
)

// driverFenceNode is the node the fence tests give the driver fence: n3, whose L4s the lab
// user's jobs land on (sbatchAs).
const driverFenceNode = "n3"

// fenceLab is the lab's fence pass (LAB_FENCE=1, test/lab/fence.sh): Slurm's own
// cgroup/v2 makes every job's directory on this host's cgroup2 hierarchy, and n3's fake
// NVML is given the per-cgroup limit functions, taking only real cgroup directories as
// the driver does: what a node with a new driver answers.
type fenceLab struct {
	lab, cgRoot, limitLog string
}

// labCgroupRoot is the cgroup2 mount as the lab's Slurm and gpumemd see it: bound at
// the chroot's /sys/fs/cgroup, or the host's /sys/fs/cgroup/unified for the host lab.
func labCgroupRoot() string {
	if root != "" {
		return "/sys/fs/cgroup"
	}
	return "/sys/fs/cgroup/unified"
}

func setupFence(t *testing.T) *fenceLab {
	t.Helper()
	if os.Getenv("LAB_CONFIGLESS") == "1" {
		t.Skip("the fence hook reads the node inventory from /etc/slurm/gpumem.d, which a configless lab does not have")
	}
	ensureLabUser(t)
	clean(t)
	f := &fenceLab{lab: "/var/lib/gpumem-lab/" + release, cgRoot: labCgroupRoot()}
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
	node["memory_limits"] = map[string]any{"log": f.limitLog, "cgroup": true}
	b, _ := json.Marshal(node)
	must(t, os.WriteFile(fake, b, 0o644))
	os.Remove(hostPath(f.limitLog))
	// Job ids start again with each lab: what an earlier lab's jobs left is not ours.
	old, _ := filepath.Glob(hostPath("/tmp/gpumem-fence-*"))
	for _, p := range old {
		os.Remove(p)
	}
	f.inventory(t)
	t.Cleanup(func() {
		ok(t, "scancel", "--quiet", "-u", labUser)
		clean(t)
		os.WriteFile(fake, orig, 0o644)
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
		"--node", driverFenceNode, "--write-inventory", "--inventory-dir", "/etc/slurm/gpumem.d", "--fence-cgroup-root", f.cgRoot,
		"--fence-state", f.lab+"/fence/state")
	if strings.Contains(ok(t, "scontrol", "show", "node", driverFenceNode), "REASON") {
		t.Logf("%s", ok(t, "scontrol", "show", "node", driverFenceNode))
	}
	c, err := inventory.LoadPath(ctldConf("gpumem.d/" + driverFenceNode + ".json"))
	if err != nil || len(c.Nodes) != 1 {
		t.Fatalf("%s's inventory: %v", driverFenceNode, err)
	}
	return c.Nodes[0].GPUs
}

// jobScript is what each fence test's job runs first: it copies the fake driver's
// state, its recorded fence and its own /proc/self/cgroup where the test reads them
// (what the job's first code sees), tries a cgroup of its own below the job's, then
// waits (bounded) for the test to have read its allocation. One line: the test reads
// the job's record with `scontrol -o`, which a line break in the command would split.
func (f *fenceLab) jobScript() string {
	return fmt.Sprintf(`cat %s > /tmp/gpumem-fence-seen-$SLURM_JOB_ID 2>&1; cat %s/fence/state/$SLURM_JOB_ID >> /tmp/gpumem-fence-seen-$SLURM_JOB_ID 2>&1; `+
		`grep '^0::' /proc/self/cgroup > /tmp/gpumem-fence-cg-$SLURM_JOB_ID; `+
		`d=%s$(sed -n 's|^0::||p' /proc/self/cgroup | sed 's|/step_.*||'); mkdir $d/mine 2>/dev/null && echo MADE-A-SUBCGROUP >> /tmp/gpumem-fence-seen-$SLURM_JOB_ID; `+
		`srun --export=NONE true; `+
		`for i in $(seq 300); do [ -e /tmp/gpumem-fence-go-$SLURM_JOB_ID ] && break; sleep 0.2; done; true`, f.limitLog, f.lab, f.cgRoot)
}

// heldJob submits a job as the lab user, held, so that the test sees it from its
// start; the script is jobScript's.
func (f *fenceLab) heldJob(t *testing.T, extra ...string) (id, seen string) {
	t.Helper()
	args := append([]string{"--hold", "--output=/dev/null", "--wrap", f.jobScript()}, extra...)
	id = sbatchAs(t, args...)
	seen = f.seen(t, id)
	return id, seen
}

// seen is where job id's script leaves what it saw; removed at the test's end.
func (f *fenceLab) seen(t *testing.T, id string) string {
	seen := hostPath("/tmp/gpumem-fence-seen-" + id)
	t.Cleanup(func() {
		for _, p := range []string{"seen", "go", "cg"} {
			os.Remove(hostPath("/tmp/gpumem-fence-" + p + "-" + id))
		}
	})
	return seen
}

// jobCgroup is job id's cgroup as Slurm made it, from the job's own process's
// /proc/self/cgroup (as the lab sees the path): the first directory below
// Slurm's slurmstepd scope.
func (f *fenceLab) jobCgroup(t *testing.T, id string) string {
	t.Helper()
	var line string
	eventually(30*time.Second, func() bool {
		b, _ := os.ReadFile(hostPath("/tmp/gpumem-fence-cg-" + id))
		line = strings.TrimSpace(string(b))
		return line != ""
	})
	rel, ok := strings.CutPrefix(line, "0::")
	parts := strings.Split(strings.TrimPrefix(rel, "/"), "/")
	for i, p := range parts {
		if ok && strings.HasSuffix(p, "slurmstepd.scope") && i+1 < len(parts) {
			return f.cgRoot + "/" + strings.Join(parts[:i+2], "/")
		}
	}
	t.Fatalf("job %s ran in %q: not below Slurm's slurmstepd scope", id, line)
	return ""
}

// limitsOn are the fake driver's calls on dir: sets, then clears (soft 0, hard MAX).
func (f *fenceLab) limitsOn(t *testing.T, dir string) (sets, clears []nvmlsrc.FakeLimitCall) {
	t.Helper()
	calls, err := nvmlsrc.ReadFakeLimits(hostPath(f.limitLog))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.Namespace != dir {
			continue
		}
		if c.Hard == nvml.DEVICE_MEMORY_LIMIT_MAX && c.Soft == 0 {
			clears = append(clears, c)
		} else {
			sets = append(sets, c)
		}
	}
	return sets, clears
}

// strayLimits are calls on any cgroup but those named (and gpumemd's own probe).
func (f *fenceLab) strayLimits(t *testing.T, dirs ...string) []nvmlsrc.FakeLimitCall {
	t.Helper()
	calls, err := nvmlsrc.ReadFakeLimits(hostPath(f.limitLog))
	if err != nil {
		t.Fatal(err)
	}
	var out []nvmlsrc.FakeLimitCall
	for _, c := range calls {
		if !strings.HasSuffix(c.Namespace, "/gpumem.probe") && !slices.Contains(dirs, c.Namespace) {
			out = append(out, c)
		}
	}
	return out
}

// breakNode changes n3 after its inventory said driver, for the rest of the test:
// confLine (if any) is added to its gpumemd configuration, limits (a JSON member of the
// fake's memory_limits, e.g. "answer":"ERROR_UNKNOWN") to its fake NVML. setupFence's
// cleanup puts the fake back; the configuration is put back here.
func (f *fenceLab) breakNode(t *testing.T, confLine, limits string) {
	t.Helper()
	if confLine != "" {
		conf := hostPath(f.lab + "/fence/" + driverFenceNode + ".conf")
		orig, err := os.ReadFile(conf)
		must(t, err)
		t.Cleanup(func() { os.WriteFile(conf, orig, 0o644) })
		must(t, os.WriteFile(conf, append(orig, confLine+"\n"...), 0o644))
	}
	fake := hostPath(f.lab + "/nodes/" + driverFenceNode + ".json")
	b, err := os.ReadFile(fake)
	must(t, err)
	if !strings.Contains(string(b), `"cgroup":true`) {
		t.Fatalf("%s: no memory_limits with cgroup in %s", driverFenceNode, fake)
	}
	must(t, os.WriteFile(fake, []byte(strings.Replace(string(b), `"cgroup":true`, `"cgroup":true,`+limits, 1)), 0o644))
}

// notDrained fails the test when the fence node is drained or down.
func notDrained(t *testing.T) {
	t.Helper()
	out := ok(t, "sinfo", "-h", "-n", driverFenceNode, "-o", "%T %E")
	if strings.Contains(strings.ToLower(out), "drain") || strings.Contains(out, "down") {
		t.Fatalf("%s drained: %s", driverFenceNode, out)
	}
}

// letGo lets job id's script end.
func letGo(t *testing.T, id string) {
	t.Helper()
	must(t, os.WriteFile(hostPath("/tmp/gpumem-fence-go-"+id), nil, 0o644))
}

// fencedRun is what one job of a fence test showed: its cgroup as Slurm made it, the
// GPU Slurm gave it on n3, the limit calls on that cgroup, and what its first code saw.
type fencedRun struct {
	id, dir, saw   string
	gpu            int
	sets, clears   []nvmlsrc.FakeLimitCall
	recordLeft     bool
	limitLeft      bool
	cgroupOutlived bool
}

// run releases held job id (or, for "", one already queued) and follows it to its end.
func (f *fenceLab) run(t *testing.T, id, seen string, release bool) fencedRun {
	t.Helper()
	if release {
		ok(t, "scontrol", "release", id)
	}
	waitOwnState(t, id, 60*time.Second, "RUNNING")
	r := fencedRun{id: id, dir: f.jobCgroup(t, id), gpu: -1}
	if js := allocatedGPUs(t, id); len(js) == 1 {
		r.gpu = js[0]
	}
	letGo(t, id)
	waitGone(t, id)
	b, _ := os.ReadFile(seen)
	r.saw = string(b)
	r.sets, r.clears = f.limitsOn(t, r.dir)
	r.recordLeft = f.recordLeft(t, id)
	eventually(10*time.Second, func() bool { _, err := os.Stat(hostPath(r.dir)); return err != nil })
	_, err := os.Stat(hostPath(r.dir))
	r.cgroupOutlived = err == nil
	// A limit goes with its cgroup, as the driver's does: one is left only on a
	// directory that is still there.
	calls, _ := nvmlsrc.ReadFakeLimits(hostPath(f.limitLog))
	_, set := nvmlsrc.CurrentFakeLimit(calls, max(r.gpu, 0), r.dir)
	r.limitLeft = set && r.cgroupOutlived
	return r
}

// fenced checks a shard job's run: one hard limit of want bytes on the GPU Slurm gave
// it, set by root on the directory Slurm made (as the job's own process names it)
// before the job's first code, one clear after, nothing left, no sub-cgroup of the
// user's, and the fence readable by the job.
func (r fencedRun) fenced(t *testing.T, want uint64) {
	t.Helper()
	if strings.Contains(r.saw, "MADE-A-SUBCGROUP") {
		t.Errorf("job %s: the lab user made a cgroup below the job's", r.id)
	}
	// The epilog clears the limit where it runs before Slurm removes the cgroup
	// (RunInJob on 24.11 and 26.05, most times); where it runs after (22.05, whose slurmd
	// runs it, and now and then 24.11) the directory's removal took the limit (never a
	// soft one: gpumem sets none) with it, which clean checks: nothing outlives the job.
	if len(r.sets) != 1 || r.sets[0].GPU != r.gpu || r.sets[0].Hard != want || r.sets[0].Soft != 0 || r.sets[0].EUID != 0 || len(r.clears) > 1 {
		t.Fatalf("job %s (GPU %d, cgroup %s): sets %+v, clears %+v; want one %d-byte hard limit by root, then at most one clear", r.id, r.gpu, r.dir, r.sets, r.clears, want)
	}
	firstLine, _, _ := strings.Cut(r.saw, "\n")
	var first nvmlsrc.FakeLimitCall
	if err := json.Unmarshal([]byte(firstLine), &first); err != nil {
		t.Fatalf("job %s's first code saw %q; want the limit already set", r.id, r.saw)
	}
	if first.Namespace != "" && !strings.Contains(r.saw, r.dir) {
		t.Fatalf("job %s's first code saw %q; want its own limit on %s already set", r.id, r.saw, r.dir)
	}
	if !strings.Contains(r.saw, `"fence":"driver"`) {
		t.Errorf("job %s could not read its fence (driver) from the prolog's record: %q", r.id, r.saw)
	}
	r.clean(t)
}

// unfenced checks a run that held no shard here: no limit on its cgroup, nothing left.
func (r fencedRun) unfenced(t *testing.T) {
	t.Helper()
	if len(r.sets) != 0 || len(r.clears) != 0 {
		t.Errorf("job %s holds no shard on %s but its cgroup got %+v %+v", r.id, driverFenceNode, r.sets, r.clears)
	}
	r.clean(t)
}

func (r fencedRun) clean(t *testing.T) {
	t.Helper()
	if r.recordLeft {
		t.Errorf("the fence record of job %s outlived it", r.id)
	}
	if r.limitLeft {
		t.Errorf("job %s: a limit left on %s after the job", r.id, r.dir)
	}
	if r.cgroupOutlived {
		t.Errorf("job %s: its cgroup %s outlived it", r.id, r.dir)
	}
}

// allocatedGPUs are the GPUs of n3 Slurm gave job id, from Slurm's own record of it.
func allocatedGPUs(t *testing.T, id string) []int {
	t.Helper()
	var out []int
	for _, u := range jobRecord(t, id).Uses {
		if u.Node == driverFenceNode {
			out = append(out, u.GPU)
		}
	}
	return out
}

// jobRecord is job id's own record, as gpumem reads it.
func jobRecord(t *testing.T, id string) slurmcli.Job {
	t.Helper()
	r := &slurmcli.JobReader{Scontrol: labCommand(t, "scontrol"), Squeue: labCommand(t, "squeue")}
	j, err := r.One(context.Background(), id)
	if err != nil {
		t.Fatalf("job %s's record: %v", id, err)
	}
	return j
}

// labCommand is a Runner of the lab's Slurm command name (inside the chroot from
// 24.11 on).
func labCommand(t *testing.T, name string) slurmcli.Runner {
	t.Helper()
	if root == "" {
		return slurmcli.Runner{Path: name}
	}
	p := filepath.Join(t.TempDir(), name)
	must(t, os.WriteFile(p, []byte("#!/bin/sh\nexec chroot "+root+" "+name+" \"$@\"\n"), 0o755))
	return slurmcli.Runner{Path: p}
}

// ownState is job id's own state ("" once it is gone): squeue -j lists every task of
// an array for its master id and every component of a hetjob for its leader's, so the
// line of that job id is the one read.
func ownState(t *testing.T, id string) string {
	t.Helper()
	r := slurm(t, 30*time.Second, "", "squeue", "-h", "-j", id, "-o", "%A %T")
	if r.code != 0 && !strings.Contains(r.err, "Invalid job id") {
		// squeue failed (a timeout under load, say): that is not the job gone, and
		// taking it for gone would check what its epilog leaves before it ran.
		return "unknown (squeue: " + strings.TrimSpace(r.err) + ")"
	}
	for _, l := range strings.Split(r.out, "\n") {
		if raw, st, ok := strings.Cut(strings.TrimSpace(l), " "); ok && raw == id {
			return st
		}
	}
	return ""
}

// waitOwnState waits for job id's own state to be want.
func waitOwnState(t *testing.T, id string, d time.Duration, want string) {
	t.Helper()
	var st string
	if !eventually(d, func() bool { st = ownState(t, id); return st == want }) {
		t.Fatalf("job %s: state %q after %s; want %s", id, st, d, want)
	}
}

// recordLeft says whether job id's fence record is still there once the job is gone.
// The epilog removes it before Slurm ends the job; one seen late is logged (squeue may
// have said gone early) and counts as left only if it stays for seconds. Before 26.05
// Slurm can start the epilog with the job user's ids, and it cannot remove the record
// (fencehook's notRoot): there gpumemd's sweep must, and f.inventory runs one.
func (f *fenceLab) recordLeft(t *testing.T, id string) bool {
	t.Helper()
	p := hostPath(f.lab + "/fence/state/" + id)
	if _, err := os.Stat(p); err != nil {
		return false
	}
	if eventually(5*time.Second, func() bool { _, err := os.Stat(p); return err != nil }) {
		t.Logf("job %s: its fence record went only after the job had left the queue", id)
		return false
	}
	if has(slurmrel.EpilogAsRoot) {
		return true
	}
	f.inventory(t)
	if _, err := os.Stat(p); err == nil {
		t.Logf("job %s: its fence record outlived its epilog and gpumemd's sweep", id)
		return true
	}
	t.Logf("%s: job %s's epilog left its fence record (Slurm before 26.05 can start it without root); gpumemd's sweep removed it", release, id)
	return false
}

// waitGone waits for job id itself to leave the queue.
func waitGone(t *testing.T, id string) {
	t.Helper()
	waitOwnState(t, id, 60*time.Second, "")
}

// gpumemd's prolog sets the shard job's slice as the hard limit on the job's cgroup, as
// Slurm's cgroup/v2 made it, as root, before the job's first code runs; the epilog
// clears it. 24.11 and 26.05 run it as the Prolog (PrologFlags=RunInJob); 22.05, whose
// Prolog runs before the job's cgroup exists, through gpumem's SPANK plugin in the
// extern step (PrologFlags=Contain).
func TestFenceDriverLimitBeforeTheJobRuns(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	gpus := f.inventory(t)
	for _, g := range gpus {
		if g.FenceOf() != inventory.FenceDriver || g.FenceBackend == "" {
			t.Fatalf("%s GPU %d says fence %q backend %q; want driver with its backend on %s", driverFenceNode, g.Index, g.FenceOf(), g.FenceBackend, release)
		}
	}
	// Everything the user controls about the job, aimed at the limit: another job id,
	// node and device list in the environment; the script tries a sub-cgroup and a step
	// with other options.
	id, seen := f.heldJob(t, "--export=ALL,SLURM_JOB_ID=1,SLURMD_NODENAME=n1,CUDA_VISIBLE_DEVICES=3,SLURM_SHARDS_ON_NODE=20,GPUMEM_CONF=/tmp/x")
	r := f.run(t, id, seen, true)
	r.fenced(t, 4<<30)
	if stray := f.strayLimits(t, r.dir); len(stray) != 0 {
		t.Errorf("limits on other cgroups than job %s's %s: %+v", id, r.dir, stray)
	}
	notDrained(t)
	t.Logf("%s: job %s fenced on %s (Slurm's cgroup/v2), GPU %d", release, id, r.dir, r.gpu)
}

// A node that said it fences and cannot set a job's limit never runs the job there
// unfenced: the prolog fails (counted); on 24.11 and 26.05 Slurm holds the job off the
// node, on 22.05 (SPANK) `gpumemd fence-check` fails the job's steps before their tasks.
func TestFenceFailureNeverRunsTheJobUnfenced(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	failures := hostPath(f.lab + "/fence/failures.log")
	os.Remove(failures)
	// The driver refuses every call from now on; the inventory still says driver.
	f.breakNode(t, "", `"answer":"ERROR_UNKNOWN"`)
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
