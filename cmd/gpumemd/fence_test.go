package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/drainreason"
	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/fencehook"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// fenceNode is a node of two fake H100s that hold the driver fence, with its
// gpumem.conf, inventory, fake NVML (recording to log) and cgroup tree.
type fenceNode struct {
	conf, log, root, state, failures string
	drained                          []string
	asked                            int
	slept                            time.Duration
}

func newFenceNode(t *testing.T, fences [2]string, answer string) *fenceNode {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the fake NVML, as the real one, sets limits for root only")
	}
	dir := t.TempDir()
	n := &fenceNode{log: filepath.Join(dir, "limits.log"), root: filepath.Join(dir, "cgroup"),
		state: filepath.Join(dir, "state"), failures: filepath.Join(dir, "failures.log")}
	ml := fmt.Sprintf(`{"log": %q, "answer": %q}`, n.log, answer)
	fake := filepath.Join(dir, "node.json")
	os.WriteFile(fake, []byte(`{"memory_limits": `+ml+`, "gpus": [{"model": "h100-80gb"}, {"model": "h100-80gb"}]}`), 0o644)
	inv := filepath.Join(dir, "inv")
	node := inventory.Node{Name: "n1", GPUs: []inventory.GPU{
		{Index: 0, Type: "h100", MemoryMiB: 81559, Fence: fences[0]},
		{Index: 1, Type: "h100", MemoryMiB: 81559, Fence: fences[1]},
	}}
	if _, _, err := inventory.WriteNode(inv, node); err != nil {
		t.Fatal(err)
	}
	n.conf = filepath.Join(dir, "gpumem.conf")
	os.WriteFile(n.conf, []byte(fmt.Sprintf("ShardUnit = 1G\n[gpumemd]\nNVML = fake:%s\nInventoryDir = %s\nFenceCgroupRoot = %s\nFenceState = %s\nFenceFailures = %s\n",
		fake, inv, n.root, n.state, n.failures)), 0o644)
	return n
}

// env is slurmd's prolog environment for job id, plus whatever a hostile user might
// hope reaches it; slices is what Slurm allocated.
func (n *fenceNode) env(id string, slices []fence.Slice, extra map[string]string) fencehook.Env {
	vars := map[string]string{"SLURM_JOB_ID": id, "SLURMD_NODENAME": "n1"}
	for k, v := range extra {
		vars[k] = v
	}
	e := realFenceEnv()
	e.Getenv = func(k string) string { return vars[k] }
	e.Allocated = func(_ context.Context, _, job, node string) ([]fence.Slice, error) {
		n.asked++
		if job != id || node != "n1" {
			return nil, fmt.Errorf("asked for job %s on %s", job, node)
		}
		return slices, nil
	}
	e.Drain = func(_, node, reason string) error { n.drained = append(n.drained, node+": "+reason); return nil }
	e.ResumeFence = func(_, node, job string) (bool, error) {
		for i, d := range n.drained {
			if drainreason.FenceJob(strings.TrimPrefix(d, node+": ")) == job {
				n.drained = append(n.drained[:i], n.drained[i+1:]...)
				return true, nil
			}
		}
		return false, nil
	}
	// The prolog's own cgroup, where slurmstepd started it: the job's extern step.
	e.ReadFile = func(p string) ([]byte, error) {
		if p != "/proc/self/cgroup" {
			return nil, fmt.Errorf("%s not read here", p)
		}
		return []byte("0::/" + testScope + "/job_" + id + "/step_extern/slurm\n"), nil
	}
	e.Now = func() time.Time { return time.Unix(0, 0) }
	e.Sleep = func(d time.Duration) { n.slept += d }
	return e
}

// testScope is where Slurm's cgroup/v2 puts job cgroups on a node of one slurmd.
const testScope = "system.slice/slurmstepd.scope"

func (n *fenceNode) jobDir(t *testing.T, id string) string {
	d := filepath.Join(n.root, testScope, "job_"+id)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

type limitSet struct {
	GPU  int
	Path string
	Hard uint64
}

func (n *fenceNode) calls(t *testing.T) []limitSet {
	cs, err := nvmlsrc.ReadFakeLimits(n.log)
	if err != nil {
		t.Fatal(err)
	}
	var out []limitSet
	for _, c := range cs {
		out = append(out, limitSet{c.GPU, c.Namespace, c.Hard})
	}
	return out
}

func TestFencePrologSetsTheSliceOnTheJobCgroup(t *testing.T) {
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	dir := n.jobDir(t, "42")
	// Everything a user controls in their job's environment, and a sub-cgroup and a
	// cgroup named like another job: none of it may move or change the limit.
	hostile := map[string]string{"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_SHARDS_ON_NODE": "80", "SPANK_SLURM_JOB_ID": "43",
		"GPUMEM_CONF": "/tmp/mine.conf", "SLURM_JOB_GPUS": "0,1"}
	os.MkdirAll(filepath.Join(dir, "step_0/user/mine"), 0o755)
	n.jobDir(t, "43")
	var errb bytes.Buffer
	slices := []fence.Slice{{GPU: 0, Shards: 23}, {GPU: 1, Shards: 7}} // a split, as 24.11 prints it
	if rc := fenceProlog([]string{"--config", n.conf}, n.env("42", slices, hostile), &errb); rc != 0 {
		t.Fatalf("prolog rc %d: %s", rc, errb.String())
	}
	want := []limitSet{{0, dir, 23 << 30}, {1, dir, 7 << 30}}
	if got := n.calls(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("limits set %+v; want %+v", got, want)
	}
	if f := fencehook.JobFence(n.state, "42"); f != inventory.FenceDriver {
		t.Errorf("recorded fence %q; want driver", f)
	}
	// The epilog clears both GPUs and the record.
	if rc := fenceEpilog([]string{"--config", n.conf}, n.env("42", nil, nil), &errb); rc != 0 {
		t.Fatalf("epilog rc %d", rc)
	}
	cs, _ := nvmlsrc.ReadFakeLimits(n.log)
	for gpu := 0; gpu < 2; gpu++ {
		if c, ok := nvmlsrc.CurrentFakeLimit(cs, gpu, dir); ok {
			t.Errorf("GPU %d: limit %+v left after the epilog", gpu, c)
		}
	}
	if f := fencehook.JobFence(n.state, "42"); f != "" {
		t.Errorf("fence record %q left after the epilog", f)
	}
}

func TestFencePrologJobsWithoutALimit(t *testing.T) {
	for _, c := range []struct {
		name   string
		fences [2]string
		slices []fence.Slice
		asked  int
		fence  string
	}{
		{"whole GPU", [2]string{inventory.FenceDriver, inventory.FenceDriver}, []fence.Slice{{GPU: 0, Whole: true}}, 1, inventory.FenceHardware},
		{"no GPU", [2]string{inventory.FenceDriver, inventory.FenceDriver}, nil, 1, ""},
		// A node that said it cannot fence: no Slurm and no NVML call at all.
		{"node without a fence", [2]string{inventory.FenceNone, inventory.FenceNone}, []fence.Slice{{GPU: 0, Shards: 4}}, 0, ""},
	} {
		n := newFenceNode(t, c.fences, "")
		n.jobDir(t, "7")
		var errb bytes.Buffer
		rc := fenceProlog([]string{"--config", n.conf}, n.env("7", c.slices, nil), &errb)
		if rc != 0 || len(n.calls(t)) != 0 || n.asked != c.asked || fencehook.JobFence(n.state, "7") != c.fence {
			t.Errorf("%s: rc %d, calls %+v, asked Slurm %d times, fence %q (%s); want rc 0, no call, %d, %q",
				c.name, rc, n.calls(t), n.asked, fencehook.JobFence(n.state, "7"), errb.String(), c.asked, c.fence)
		}
	}
}

func TestFencePrologFailsRatherThanRunUnfenced(t *testing.T) {
	for _, c := range []struct {
		name, answer, policy, wants string
		noDir                       bool
	}{
		{"driver refuses", "ERROR_NOT_SUPPORTED", "fail", "not supported here", false},
		{"no permission", "ERROR_NO_PERMISSION", "drain", "root only", false},
		{"no job cgroup", "", "fail", "no such file", true},
	} {
		n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, c.answer)
		if c.policy == "drain" {
			b, _ := os.ReadFile(n.conf)
			os.WriteFile(n.conf, append(b, "FenceFailure = drain\n"...), 0o644)
		}
		if !c.noDir {
			n.jobDir(t, "9")
		}
		var errb bytes.Buffer
		rc := fenceProlog([]string{"--config", n.conf}, n.env("9", []fence.Slice{{GPU: 1, Shards: 10}}, nil), &errb)
		failures, _ := os.ReadFile(n.failures)
		if rc != 1 || !strings.Contains(errb.String(), c.wants) || strings.Count(string(failures), "\n") != 1 {
			t.Errorf("%s: rc %d, stderr %q, failures %q; want rc 1, %q, one failure counted", c.name, rc, errb.String(), failures, c.wants)
		}
		wantDrain := 0
		if c.policy == "drain" {
			wantDrain = 1
		}
		if len(n.drained) != wantDrain || (wantDrain == 1 && !strings.HasPrefix(n.drained[0], "n1: gpumem: ")) {
			t.Errorf("%s: drained %q; want %d drain with gpumem's reason", c.name, n.drained, wantDrain)
		}
		if cs := n.calls(t); len(cs) != 0 && c.answer == "" {
			t.Errorf("%s: limits set %+v", c.name, cs)
		}
	}
}

func TestFencePrologOnARealNodeNeedsToRunInTheJob(t *testing.T) {
	// As a real node's prolog without RunInJob (22.05, or the flag left out): its own
	// cgroup is slurmd's, so it refuses rather than limit a cgroup it cannot prove.
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	dir := n.jobDir(t, "5")
	e := n.env("5", []fence.Slice{{GPU: 0, Shards: 2}}, nil)
	fake := e.OpenNVML
	e.OpenNVML = func(spec string) (fence.Lib, string, func(), error) {
		lib, _, closeLib, err := fake(spec)
		return lib, nvmlsrc.KindReal, closeLib, err
	}
	e.ReadFile = func(string) ([]byte, error) { return []byte("0::/system.slice/slurmd.service\n"), nil }
	var errb bytes.Buffer
	if rc := fenceProlog([]string{"--config", n.conf}, e, &errb); rc != 1 || !strings.Contains(errb.String(), "RunInJob") {
		t.Fatalf("rc %d, %s; want a failure that names RunInJob", rc, errb.String())
	}
	rel, _ := filepath.Rel(n.root, dir)
	e.ReadFile = func(string) ([]byte, error) { return []byte("0::/" + rel + "/step_extern/slurm\n"), nil }
	if rc := fenceProlog([]string{"--config", n.conf}, e, &errb); rc != 0 {
		t.Fatalf("rc %d in the job's extern step: %s", rc, errb.String())
	}
	if got := n.calls(t); len(got) != 1 || got[0] != (limitSet{0, dir, 2 << 30}) {
		t.Fatalf("limits %+v", got)
	}
}

// Under SPANK (Slurm only logs a failing extern-step hook), fence-check is what keeps
// the job's steps from running on a driver node without the limit its prolog should
// have set: a step runs when the prolog recorded an outcome for this job, never when it
// failed, never ran, or ran for another job.
func TestFenceCheckRunsAStepOnlyAfterTheProlog(t *testing.T) {
	driver := [2]string{inventory.FenceDriver, inventory.FenceDriver}
	for _, c := range []struct {
		name   string
		fences [2]string
		answer string
		slices []fence.Slice
		prolog bool
		want   int
		asks   int // Slurm calls by fence-check: only where no record says the outcome
	}{
		{"fenced", driver, "", []fence.Slice{{GPU: 1, Shards: 10}}, true, 0, 0},
		{"no GPU on the node", driver, "", nil, true, 0, 0},
		{"whole GPU", driver, "", []fence.Slice{{GPU: 0, Whole: true}}, true, 0, 0},
		// The prolog failed: its record says so, and the check refuses the step without
		// asking anyone (Slurm is requeueing the job meanwhile).
		{"prolog failed", driver, "ERROR_NOT_SUPPORTED", []fence.Slice{{GPU: 1, Shards: 10}}, true, 1, 0},
		// 22.05 starts no extern step for a job requeued onto the same node: the
		// step's check sets the fence itself.
		{"prolog never ran", driver, "", []fence.Slice{{GPU: 1, Shards: 10}}, false, 0, 1},
		{"node without a fence", [2]string{inventory.FenceNone, inventory.FenceNone}, "", []fence.Slice{{GPU: 1, Shards: 10}}, false, 0, 0},
	} {
		n := newFenceNode(t, c.fences, c.answer)
		n.jobDir(t, "12")
		var errb bytes.Buffer
		if c.prolog {
			fenceProlog([]string{"--config", n.conf}, n.env("12", c.slices, nil), &errb)
		}
		// Another job's record (13) never lets job 12's step run.
		os.MkdirAll(n.state, 0o755)
		os.WriteFile(filepath.Join(n.state, "13"), []byte("driver\n"), 0o644)
		asked := n.asked
		errb.Reset()
		rc := fenceCheck([]string{"--config", n.conf}, n.env("12", c.slices, map[string]string{"GPUMEM_FENCE": "driver"}), &errb)
		if rc != c.want || n.asked != asked+c.asks {
			t.Errorf("%s: fence-check rc %d (%s), asked Slurm %d more times; want rc %d and %d", c.name, rc, errb.String(), n.asked-asked, c.want, c.asks)
		}
		if c.want == 1 && !strings.Contains(errb.String(), "job 12: its GPU memory fence could not be set on n1 (fence: GPU 1: ") {
			t.Errorf("%s: fence-check says %q", c.name, errb.String())
		}
	}
	// A failed prolog's run stays refused after the node stops promising the fence (its
	// inventory is rewritten when the driver stops answering), as seen on 23.11.
	n := newFenceNode(t, driver, "ERROR_UNKNOWN")
	n.jobDir(t, "12")
	slices := []fence.Slice{{GPU: 1, Shards: 10}}
	var errb bytes.Buffer
	if rc := fenceProlog([]string{"--config", n.conf}, n.env("12", slices, nil), &errb); rc != 1 {
		t.Fatalf("prolog with a refusing driver: rc %d (%s)", rc, errb.String())
	}
	unfenced := inventory.Node{Name: "n1", GPUs: []inventory.GPU{
		{Index: 0, Type: "h100", MemoryMiB: 81559, Fence: inventory.FenceNone},
		{Index: 1, Type: "h100", MemoryMiB: 81559, Fence: inventory.FenceNone},
	}}
	if _, _, err := inventory.WriteNode(filepath.Join(filepath.Dir(n.conf), "inv"), unfenced); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if rc := fenceCheck([]string{"--config", n.conf}, n.env("12", slices, nil), &errb); rc != 1 || !strings.Contains(errb.String(), "so this step does not run unfenced") {
		t.Errorf("fence-check after a failed prolog, node no longer fencing: rc %d (%s); want 1", rc, errb.String())
	}
	if f := fencehook.JobFence(n.state, "12"); f != "" {
		t.Errorf("the task prolog reads fence %q for a failed run; want none", f)
	}
}

// TestFencePrologWaitsOutAControllerRestart: while slurmctld cannot be reached (a restart,
// a failover) the prolog asks again, and fences the job once it answers; a controller
// that stays away, or any other error, still fails the prolog, so the job never runs
// unfenced.
func TestFencePrologWaitsOutAControllerRestart(t *testing.T) {
	down := fmt.Errorf("scontrol -d show job 42: exit status 1: slurm_load_jobs error: Unable to contact slurm controller (connect failure) (%w)", slurmcli.ErrUnreachable)
	slices := []fence.Slice{{GPU: 0, Shards: 20}}
	for _, c := range []struct {
		name  string
		fails int   // answers before the allocation
		err   error // what they are
		rc    int
		asked int
		slept time.Duration
	}{
		{"back after 3 tries", 3, down, 0, 4, 1*time.Second + 2*time.Second + 4*time.Second},
		{"away for good", 1000, down, 1, 14, 1*time.Second + 2*time.Second + 4*time.Second + 10*5*time.Second},
		{"a refusal is an answer", 1000, errors.New("slurm_load_jobs error: Invalid job id specified"), 1, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
			n.jobDir(t, "42")
			env := n.env("42", slices, nil)
			real := env.Allocated
			env.Allocated = func(ctx context.Context, s, job, node string) ([]fence.Slice, error) {
				if n.asked < c.fails {
					n.asked++
					return nil, c.err
				}
				return real(ctx, s, job, node)
			}
			var errb bytes.Buffer
			rc := fenceProlog([]string{"--config", n.conf}, env, &errb)
			if rc != c.rc || n.asked != c.asked || n.slept != c.slept {
				t.Errorf("rc %d after %d questions and %s of pauses; want rc %d, %d, %s\n%s", rc, n.asked, n.slept, c.rc, c.asked, c.slept, errb.String())
			}
			if c.rc == 0 && len(n.calls(t)) != 1 {
				t.Errorf("fenced by %+v; want one limit", n.calls(t))
			}
		})
	}
}

// The epilog clears the limits on the very directory the prolog set them on: one
// removed and made again under the same name (a new job's, after a requeue) is not
// touched, and nothing is cleared twice.
func TestFenceEpilogClearsOnlyTheRecordedCgroup(t *testing.T) {
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	dir := n.jobDir(t, "42")
	var errb bytes.Buffer
	if rc := fenceProlog([]string{"--config", n.conf}, n.env("42", []fence.Slice{{GPU: 1, Shards: 5}}, nil), &errb); rc != 0 {
		t.Fatalf("prolog rc %d: %s", rc, errb.String())
	}
	r, ok := fencehook.ReadRecord(n.state, "42")
	if !ok || r.Cgroup != dir || r.CgroupID == 0 || !reflect.DeepEqual(r.GPUs, []int{1}) || r.Fence != inventory.FenceDriver {
		t.Fatalf("record %+v; want GPU 1 on %s with its inode", r, dir)
	}
	os.Rename(dir, dir+".old") // the old inode lives on, so the new one differs
	n.jobDir(t, "42")
	before := len(n.calls(t))
	fenceEpilog([]string{"--config", n.conf}, n.env("42", nil, nil), &errb)
	if got := n.calls(t); len(got) != before {
		t.Errorf("the epilog cleared a directory made after the prolog: %+v", got[before:])
	}
	if _, ok := fencehook.ReadRecord(n.state, "42"); ok {
		t.Errorf("record left after the epilog")
	}
}

// A hook that hangs (slurmctld that never answers, a driver call that never returns)
// fails when FenceTimeout runs out, and says which part ran out.
func TestFencePrologDeadline(t *testing.T) {
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	b, _ := os.ReadFile(n.conf)
	os.WriteFile(n.conf, append(b, "FenceTimeout = 1s\n"...), 0o644)
	n.jobDir(t, "42")
	env := n.env("42", nil, nil)
	env.Allocated = func(context.Context, string, string, string) ([]fence.Slice, error) { select {} }
	var errb bytes.Buffer
	start := time.Now()
	rc := fenceProlog([]string{"--config", n.conf}, env, &errb)
	if rc != 1 || !strings.Contains(errb.String(), "FenceTimeout (1s) ran out while reading the job's allocation") || time.Since(start) > 30*time.Second {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
}

// A failed fence drains the node (FenceFailure=drain) with a reason naming the job;
// that job's own next success lifts it, another job's success does not.
func TestFenceDrainLiftedOnlyByThatJobsSuccess(t *testing.T) {
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	b, _ := os.ReadFile(n.conf)
	os.WriteFile(n.conf, append(b, "FenceFailure = drain\n"...), 0o644)
	var errb bytes.Buffer
	// No job directory: the fence fails and drains.
	if rc := fenceProlog([]string{"--config", n.conf}, n.env("9", []fence.Slice{{GPU: 1, Shards: 10}}, nil), &errb); rc != 1 || len(n.drained) != 1 {
		t.Fatalf("rc %d, drained %q", rc, n.drained)
	}
	if !drainreason.IsFence(n.drained[0][len("n1: "):]) || drainreason.FenceJob(n.drained[0][len("n1: "):]) != "9" {
		t.Fatalf("drain reason %q; want job 9's fence reason", n.drained[0])
	}
	n.jobDir(t, "10")
	if rc := fenceProlog([]string{"--config", n.conf}, n.env("10", []fence.Slice{{GPU: 1, Shards: 10}}, nil), &errb); rc != 0 || len(n.drained) != 1 {
		t.Fatalf("another job's success: rc %d, drained %q; want the drain kept", rc, n.drained)
	}
	n.jobDir(t, "9")
	if rc := fenceProlog([]string{"--config", n.conf}, n.env("9", []fence.Slice{{GPU: 1, Shards: 10}}, nil), &errb); rc != 0 || len(n.drained) != 0 {
		t.Fatalf("job 9's success: rc %d, drained %q; want the drain lifted", rc, n.drained)
	}
}

// Limits left by a job whose epilog never ran are cleared at gpumemd's next start;
// a job Slurm still runs here keeps its limit, and nothing is cleared when Slurm
// cannot say which jobs run.
func TestFenceSweepClearsWhatEndedJobsLeft(t *testing.T) {
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	var errb bytes.Buffer
	for _, id := range []string{"41", "42"} {
		n.jobDir(t, id)
		if rc := fenceProlog([]string{"--config", n.conf}, n.env(id, []fence.Slice{{GPU: 0, Shards: 3}}, nil), &errb); rc != 0 {
			t.Fatalf("prolog %s: %s", id, errb.String())
		}
	}
	opt := options{}
	cfg, err := config.LoadGpumemd(n.conf)
	if err != nil {
		t.Fatal(err)
	}
	opt.Gpumemd = cfg
	env := n.env("0", nil, nil)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if c := sweepFences(opt, "n1", env, func(context.Context, string) (map[string]string, error) { return nil, errors.New("down") }, log); c != 0 {
		t.Fatalf("swept %d with Slurm down", c)
	}
	c := sweepFences(opt, "n1", env, func(context.Context, string) (map[string]string, error) {
		return map[string]string{"42": "RUNNING"}, nil
	}, log)
	cs, _ := nvmlsrc.ReadFakeLimits(n.log)
	_, left41 := nvmlsrc.CurrentFakeLimit(cs, 0, n.jobDir(t, "41"))
	_, left42 := nvmlsrc.CurrentFakeLimit(cs, 0, n.jobDir(t, "42"))
	if c != 1 || left41 || !left42 {
		t.Fatalf("swept %d; limit left on 41 %v, on 42 %v; want 41 cleared, 42 kept", c, left41, left42)
	}
	if _, ok := fencehook.ReadRecord(n.state, "41"); ok {
		t.Errorf("record of ended job 41 kept")
	}
	if _, ok := fencehook.ReadRecord(n.state, "42"); !ok {
		t.Errorf("record of running job 42 removed")
	}
}

// TestFenceHookOfAJobSlurmNoLongerRunsHere: a step's check that reads its job's record
// after slurmctld requeued it (its extern step's hook failed: the record then shows it
// completing or pending, with nothing on any GPU) fails the step instead of reading
// "no GPUs here", which let the batch script start unfenced until slurmstepd cancelled
// it (seen on 23.11).
func TestFenceHookOfAJobSlurmNoLongerRunsHere(t *testing.T) {
	// fencehook.SlicesOn refuses to read such a record as "no GPUs here"; the check
	// then fails the step, whatever the record said before.
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	n.jobDir(t, "12")
	env := n.env("12", nil, map[string]string{"GPUMEM_FENCE": "driver"})
	env.Allocated = func(context.Context, string, string, string) ([]fence.Slice, error) {
		return fencehook.SlicesOn(slurmcli.Job{ID: "12", State: "COMPLETING", Nodes: []string{"n1"}}, "n1")
	}
	var errb bytes.Buffer
	if rc := fenceCheck([]string{"--config", n.conf}, env, &errb); rc != 1 || !strings.Contains(errb.String(), "so this step does not run unfenced") {
		t.Errorf("fence-check of a requeued job: rc %d, %q; want 1 and the step refused", rc, errb.String())
	}
}

// A hook Slurm started with the job user's ids (Slurm 24.05 to 25.11, when the end of
// X11 forwarding races the epilog) says so: the epilog does nothing and exits 0, so the
// node is not drained for it, and its record waits for the sweep; the prolog of a
// fenced node fails, so the job never runs unfenced.
func TestFenceHookStartedWithoutRoot(t *testing.T) {
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	n.jobDir(t, "51")
	var errb bytes.Buffer
	if rc := fenceProlog([]string{"--config", n.conf}, n.env("51", []fence.Slice{{GPU: 0, Shards: 3}}, nil), &errb); rc != 0 {
		t.Fatalf("prolog as root: rc %d: %s", rc, errb.String())
	}
	user := n.env("51", nil, nil)
	user.Euid = func() int { return 2001 }
	errb.Reset()
	if rc := fenceEpilog([]string{"--config", n.conf}, user, &errb); rc != 0 || !strings.Contains(errb.String(), "run as uid 2001, not root") {
		t.Fatalf("epilog as uid 2001: rc %d, said %q; want 0 and why", rc, errb.String())
	}
	if _, ok := fencehook.ReadRecord(n.state, "51"); !ok {
		t.Errorf("the epilog without root removed the record; it cannot")
	}
	if len(n.calls(t)) != 1 {
		t.Errorf("the epilog without root made limit calls: %+v", n.calls(t))
	}
	n.jobDir(t, "52")
	user = n.env("52", []fence.Slice{{GPU: 0, Shards: 3}}, nil)
	user.Euid = func() int { return 2001 }
	errb.Reset()
	if rc := fenceProlog([]string{"--config", n.conf}, user, &errb); rc != 1 || !strings.Contains(errb.String(), "not root") {
		t.Fatalf("prolog as uid 2001: rc %d, said %q; want 1 and why", rc, errb.String())
	}
}

// The sweep leaves a record written after Slurm answered which jobs run here: a
// requeued job started again, whose new run Slurm's answer predates, keeps its record
// and limit; the next sweep, asked after it, judges it.
func TestFenceSweepKeepsARecordNewerThanSlurmsAnswer(t *testing.T) {
	n := newFenceNode(t, [2]string{inventory.FenceDriver, inventory.FenceDriver}, "")
	var errb bytes.Buffer
	prolog := func(id string) {
		n.jobDir(t, id)
		if rc := fenceProlog([]string{"--config", n.conf}, n.env(id, []fence.Slice{{GPU: 0, Shards: 3}}, nil), &errb); rc != 0 {
			t.Fatalf("prolog %s: %s", id, errb.String())
		}
	}
	prolog("61")
	opt := options{}
	cfg, err := config.LoadGpumemd(n.conf)
	if err != nil {
		t.Fatal(err)
	}
	opt.Gpumemd = cfg
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Slurm answers "not here" while job 61 starts again and its prolog runs.
	c := sweepFences(opt, "n1", n.env("0", nil, nil), func(context.Context, string) (map[string]string, error) {
		time.Sleep(10 * time.Millisecond)
		prolog("61")
		return map[string]string{}, nil
	}, log)
	if _, ok := fencehook.ReadRecord(n.state, "61"); c != 0 || !ok {
		t.Fatalf("swept %d, record kept %v; want the new run's record and limit kept", c, ok)
	}
	if c := sweepFences(opt, "n1", n.env("0", nil, nil), func(context.Context, string) (map[string]string, error) {
		return map[string]string{}, nil
	}, log); c != 1 {
		t.Fatalf("the next sweep cleared %d; want job 61's limit", c)
	}
	if _, ok := fencehook.ReadRecord(n.state, "61"); ok {
		t.Errorf("record of ended job 61 kept")
	}
}

// A running gpumemd sweeps at its start and again every interval, until it stops.
func TestFenceSweepRepeats(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	swept := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() { sweepFencesEvery(ctx, time.Millisecond, func() { swept <- struct{}{} }); close(done) }()
	for i := 0; i < 3; i++ {
		<-swept
	}
	cancel()
	<-done
}
