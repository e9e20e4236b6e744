package fencehook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/drainreason"
	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// While slurmctld cannot be reached (a restart, a failover) the hook asks again, 1 s,
// 2 s, 4 s, then every 5 s apart, for AllocationWait at most; any other answer is the
// answer at once.
func TestAllocationOfWaitsOutAControllerRestart(t *testing.T) {
	down := fmt.Errorf("scontrol -d show job 42: Unable to contact slurm controller (%w)", slurmcli.ErrUnreachable)
	want := []fence.Slice{{GPU: 0, Shards: 20}}
	for _, c := range []struct {
		name  string
		fails int
		err   error
		ok    bool
		asked int
		slept time.Duration
	}{
		{"at once", 0, down, true, 1, 0},
		{"back after 3 tries", 3, down, true, 4, 7 * time.Second},
		{"away for good", 1000, down, false, 14, 7*time.Second + 10*5*time.Second},
		{"a refusal is an answer", 1000, errors.New("Invalid job id specified"), false, 1, 0},
	} {
		asked, slept := 0, time.Duration(0)
		got, err := AllocationOf(context.Background(), func(context.Context) ([]fence.Slice, error) {
			asked++
			if asked <= c.fails {
				return nil, c.err
			}
			return want, nil
		}, func(d time.Duration) { slept += d })
		if (err == nil) != c.ok || asked != c.asked || slept != c.slept || (c.ok && !reflect.DeepEqual(got, want)) {
			t.Errorf("%s: %v, %v after %d questions and %s of pauses; want ok %v, %d, %s", c.name, got, err, asked, slept, c.ok, c.asked, c.slept)
		}
		if c.name == "away for good" && (err == nil || !strings.Contains(err.Error(), "slurmctld unreachable for 57s")) {
			t.Errorf("%s: error %v does not say how long", c.name, err)
		}
	}
	// A context that ends stops the questions too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	asked := 0
	if _, err := AllocationOf(ctx, func(context.Context) ([]fence.Slice, error) { asked++; return nil, down }, func(time.Duration) {}); err == nil || asked != 1 {
		t.Errorf("ended context: %v after %d questions; want an error after 1", err, asked)
	}
}

// A hook that reads its job's record after slurmctld requeued it (its extern step's
// hook failed: the record then shows it completing or pending, with nothing on any
// GPU) must not read "no GPUs here", which let the batch script start unfenced until
// slurmstepd cancelled it (seen on 23.11).
func TestSlicesOnAJobSlurmNoLongerRunsHere(t *testing.T) {
	uses := []slurmcli.Use{{Node: "n1", GPU: 1, Shards: 10}, {Node: "n0", GPU: 0, Shards: 3}}
	for _, c := range []struct {
		name string
		job  slurmcli.Job
		want int // slices, or -1 for an error
	}{
		{"running here", slurmcli.Job{ID: "12", State: "RUNNING", Nodes: []string{"n1"}, Uses: uses}, 1},
		{"running here, no GPU", slurmcli.Job{ID: "12", State: "RUNNING", Nodes: []string{"n0", "n1"}}, 0},
		{"completing after a requeue", slurmcli.Job{ID: "12", State: "COMPLETING", Nodes: []string{"n1"}}, -1},
		{"pending after a requeue", slurmcli.Job{ID: "12", State: "PENDING"}, -1},
		{"running elsewhere", slurmcli.Job{ID: "12", State: "RUNNING", Nodes: []string{"n2"}}, -1},
		{"no state", slurmcli.Job{ID: "12", Nodes: []string{"n1"}, Uses: uses}, -1},
	} {
		got, err := SlicesOn(c.job, "n1")
		if (err != nil) != (c.want < 0) || (err == nil && len(got) != c.want) {
			t.Errorf("%s: %v, %v; want %d slices (-1: an error)", c.name, got, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "not running on n1") {
			t.Errorf("%s: error %q does not say why", c.name, err)
		}
	}
	got, _ := SlicesOn(slurmcli.Job{ID: "12", State: "RUNNING", Nodes: []string{"n1"}, Uses: uses}, "n1")
	if want := []fence.Slice{{GPU: 1, Shards: 10}}; !reflect.DeepEqual(got, want) {
		t.Errorf("slices on n1 %+v; want %+v", got, want)
	}
}

// reasons is a node's drain reason, as Slurm keeps it.
type reasons struct {
	have    string
	err     error
	changes []string
}

func (r *reasons) Reason(string) (string, error) { return r.have, r.err }
func (r *reasons) Drain(node, reason string) error {
	r.changes = append(r.changes, "drain "+node+": "+reason)
	r.have = reason
	return nil
}
func (r *reasons) Resume(node string) error {
	r.changes = append(r.changes, "resume "+node)
	r.have = ""
	return nil
}

// A failed fence drains only a node without a reason; only that job's own success
// lifts its drain, never an admin's, the health monitor's or another job's.
func TestDrainsSetAndLiftOnlyTheirOwn(t *testing.T) {
	reason := DrainReason("9", errors.New("fence: GPU 1: not supported here\nmore"))
	if want := "gpumem: fence: job 9: GPU memory fence not set: fence: GPU 1: not supported here"; reason != want {
		t.Fatalf("reason %q; want %q", reason, want)
	}
	r := &reasons{have: "admin: disk swap"}
	if err := DrainUnlessReason(r, "n1", reason); err == nil || len(r.changes) != 0 {
		t.Errorf("drained over an admin's reason: %v, %q", err, r.changes)
	}
	r = &reasons{err: errors.New("slurmctld down")}
	if err := DrainUnlessReason(r, "n1", reason); err == nil || len(r.changes) != 0 {
		t.Errorf("drained without knowing the reason: %v, %q", err, r.changes)
	}
	r = &reasons{}
	if err := DrainUnlessReason(r, "n1", reason); err != nil || !reflect.DeepEqual(r.changes, []string{"drain n1: " + reason}) {
		t.Fatalf("drain: %v, %q", err, r.changes)
	}
	for _, job := range []string{"10", "90"} {
		if ok, err := ResumeOwnDrain(r, "n1", job); ok || err != nil || len(r.changes) != 1 {
			t.Errorf("job %s's success lifted job 9's drain: %v, %v, %q", job, ok, err, r.changes)
		}
	}
	if ok, err := ResumeOwnDrain(r, "n1", "9"); !ok || err != nil || r.have != "" {
		t.Errorf("job 9's success: %v, %v, reason %q left", ok, err, r.have)
	}
	for _, other := range []string{"admin: disk swap", drainreason.ForHealth([]string{"GPU 0 lost"}), drainreason.MIG, ""} {
		r = &reasons{have: other}
		if ok, err := ResumeOwnDrain(r, "n1", "9"); ok || err != nil || len(r.changes) != 0 {
			t.Errorf("reason %q lifted by job 9's fence: %v, %v", other, ok, err)
		}
	}
}

func TestFailureLine(t *testing.T) {
	got := FailureLine(time.Unix(3600, 0).In(time.FixedZone("x", 7200)), "job 9 on n1: driver fence not set: a\nb")
	if want := "1970-01-01T01:00:00Z job 9 on n1: driver fence not set: a b\n"; got != want {
		t.Errorf("FailureLine = %q; want %q", got, want)
	}
}

// A step runs when the prolog recorded an outcome that is not a failure, or when the
// node promises no fence; a failed run is refused whatever the node promises now.
func TestCheckStep(t *testing.T) {
	ok := fence.Record{Job: "12", Fence: "driver"}
	bad := fence.Record{Job: "12", Fence: "driver", Failed: "fence: GPU 1: not supported"}
	loadErr := errors.New("inventory unreadable")
	for _, c := range []struct {
		name              string
		rec               fence.Record
		recorded, promise bool
		err               error
		want              Step
	}{
		{"fenced", ok, true, true, nil, StepRuns},
		{"fenced, no longer promised", ok, true, false, nil, StepRuns},
		{"failed", bad, true, true, nil, StepFailed},
		{"failed, no longer promised", bad, true, false, nil, StepFailed},
		{"nothing promised", fence.Record{}, false, false, loadErr, StepRuns},
		{"promised, job unreadable", fence.Record{}, false, true, loadErr, StepUnchecked},
		{"promised, no record", fence.Record{}, false, true, nil, StepSetHere},
	} {
		if got := CheckStep(c.rec, c.recorded, c.promise, c.err); got != c.want {
			t.Errorf("%s: %d; want %d", c.name, got, c.want)
		}
	}
}

// Clear lifts limits only on the very directory the prolog set them on: one removed
// and made again under the same name (a new job's, after a requeue) is not touched.
func TestClearOnlyTheRecordedCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a job cgroup is root's: CheckDir refuses another owner's")
	}
	dir := t.TempDir()
	opened := 0
	env := Env{Lstat: os.Lstat, OpenNVML: func(string) (fence.Lib, string, func(), error) {
		opened++
		return nil, "", nil, errors.New("no NVML here")
	}}
	id, err := fence.CgroupID(os.Lstat, dir)
	if err != nil {
		t.Fatal(err)
	}
	r := fence.Record{Job: "42", Fence: "driver", Cgroup: dir, CgroupID: id + 1, GPUs: []int{1}}
	if err := Clear(env, "", r); err != nil || opened != 0 {
		t.Errorf("another directory under the recorded name: %v, NVML opened %d times; want nothing done", err, opened)
	}
	r.CgroupID = id
	if err := Clear(env, "", r); err == nil || opened != 1 {
		t.Errorf("the recorded directory: %v, NVML opened %d times; want it cleared (here: NVML's error)", err, opened)
	}
	r.Cgroup = dir + "/gone"
	if err := Clear(env, "", r); err != nil || opened != 1 {
		t.Errorf("a directory gone: %v; want nothing to clear", err)
	}
}
