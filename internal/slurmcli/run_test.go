package slurmcli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cmd")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunnerErrorCarriesStderr(t *testing.T) {
	r := slurmcli.Runner{Path: script(t, `echo "slurm_load_jobs error: Unable to contact slurm controller" >&2; exit 1`)}
	_, err := r.Run(context.Background(), "show", "job")
	if err == nil || !strings.Contains(err.Error(), "show job: exit status 1: slurm_load_jobs error: Unable to contact") {
		t.Errorf("err %v; want the command, its exit and its stderr", err)
	}
	if !errors.Is(err, slurmcli.ErrUnreachable) {
		t.Errorf("err %v: not ErrUnreachable, though scontrol could not reach slurmctld", err)
	}
	r = slurmcli.Runner{Path: script(t, `echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1`)}
	if _, err := r.Run(context.Background(), "show", "job", "7"); err == nil || errors.Is(err, slurmcli.ErrUnreachable) {
		t.Errorf("a refusal: %v; want an error that is not ErrUnreachable", err)
	}
}

func TestRunnerTimeoutAndWaitDelay(t *testing.T) {
	// The child hands its stdout to a grandchild that outlives it: without WaitDelay
	// the call would wait for the grandchild's 30s.
	r := slurmcli.Runner{Path: script(t, `sleep 30 & sleep 30`), Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := r.Run(context.Background())
	if took := time.Since(start); err == nil || took > 3*time.Second || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Errorf("hung command: %v after %s; want a timeout error within about 1.2s", err, took)
	}
	if !errors.Is(err, slurmcli.ErrUnreachable) {
		t.Errorf("hung command: %v is not ErrUnreachable", err)
	}
}

func TestRunnerCapsOutput(t *testing.T) {
	r := slurmcli.Runner{Path: script(t, `yes JobId=1`), MaxOutput: 1 << 16, Timeout: 10 * time.Second}
	start := time.Now()
	_, err := r.Run(context.Background())
	if !errors.Is(err, slurmcli.ErrTooLarge) || time.Since(start) > 5*time.Second {
		t.Errorf("endless output: %v after %s; want ErrTooLarge at once", err, time.Since(start))
	}
}

func TestJobReaderJSONThenTextFallback(t *testing.T) {
	for _, text := range []bool{false, true} {
		s := slurmtest.New(t, text)
		s.SetJobs(slurmtest.Job{ID: "501", UID: 1001, Name: "x JobState=COMPLETED", Node: "t1", GPU: 1, Shards: 10, PIDs: []int{1}},
			slurmtest.Job{ID: "502", UID: 1002, Name: "ok", Node: "t1", GPU: 0, Shards: 5, PIDs: []int{2}})
		r := &slurmcli.JobReader{Scontrol: slurmcli.Runner{Path: s.Scontrol}, Squeue: slurmcli.Runner{Path: s.Squeue}}
		js, err := r.Show(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Text() != text {
			t.Errorf("text %v: reader fell back %v", text, r.Text())
		}
		got := js.ByID()
		if text {
			// The hostile name makes 501's text record unreadable, and costs 502 nothing.
			if _, ok := got["501"]; ok || len(js.Bad) != 1 || got["502"].Uses[0].Shards != 5 {
				t.Errorf("text: %+v bad %v", got, js.Bad)
			}
			// It still holds its 10 shards: squeue says so, on a GPU it does not name.
			if len(js.Unread) != 1 || js.Unread[0].ID != "501" || !reflect.DeepEqual(js.Unread[0].Uses, []slurmcli.Use{{Node: "t1", GPU: slurmcli.AnyGPU, Shards: 10}}) {
				t.Errorf("text: unread %+v; want job 501's 10 shards on t1 from squeue", js.Unread)
			}
			sum, err := r.Summary(context.Background(), "501")
			if err != nil || sum.UID != 1001 || sum.Shards != 10 {
				t.Errorf("squeue summary of 501: %+v %v", sum, err)
			}
		} else if got["501"].State != "RUNNING" || got["501"].Uses[0].Shards != 10 || got["501"].UID != 1001 {
			t.Errorf("json: %+v", got)
		}
	}
}

func TestJobReaderDropsForgedTextLines(t *testing.T) {
	s := slurmtest.New(t, true)
	s.SetJobs(slurmtest.Job{ID: "2", UID: 2001, Name: "nl", Node: "n3", Shards: 4, PIDs: []int{1}},
		slurmtest.Job{ID: "3", UID: 2002, Name: "victim", Node: "n3", GPU: 1, Shards: 8, PIDs: []int{2}})
	// Job 2's name holds a line break and a whole forged record for job 77 (not
	// running) and one for job 3 (running): neither may count.
	forged77 := "JobId=77 JobName=f UserId=u(0) GroupId=u(0) JobState=RUNNING NodeList=n3 JOB_GRES=shard:80   Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:80(0/80,0/80,80/80) MinCPUsNode=1"
	forged3 := strings.Replace(forged77, "JobId=77", "JobId=3", 1)
	b, _ := os.ReadFile(filepath.Join(s.Dir, "jobs.txt"))
	lines := strings.SplitN(string(b), "\n", 2)
	hostile := strings.Replace(lines[0], "JobName=nl", "JobName=nl\n"+forged77+"\n"+forged3+"\nJobId=9 x", 1) + "\n" + lines[1]
	os.WriteFile(filepath.Join(s.Dir, "jobs.txt"), []byte(hostile), 0o644)
	r := &slurmcli.JobReader{Scontrol: slurmcli.Runner{Path: s.Scontrol}, Squeue: slurmcli.Runner{Path: s.Squeue}}
	js, err := r.Show(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range js.Uses() {
		if u.Shards == 80 || u.GPU == 2 {
			t.Errorf("a forged line counted: %+v (all uses %+v)", u, js.Uses())
		}
	}
	if len(js.Bad) < 3 {
		t.Errorf("bad records %v; want job 2's broken record and both forged lines", js.Bad)
	}
	// One job asked: its record must be the one line.
	s.SetJobText("2", strings.SplitN(hostile, "\n", 2)[0]+"\n"+forged77+"\n")
	one, err := r.Show(context.Background(), "2")
	if err != nil || len(one.Jobs) != 0 || len(one.Bad) == 0 {
		t.Errorf("job 2 alone: %+v %v; want it refused", one, err)
	}
}
