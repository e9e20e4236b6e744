package slurmcli

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/slurmjob"
)

// record is 22.05's `scontrol -d -o show job` line of a running shard job named name,
// with free text after the detail as a job can have it.
func record(head, name, gres, tail string) string {
	return head + " JobName=" + name + " UserId=lab(2001) GroupId=lab(2001) MCS_label=N/A Priority=1 Nice=0 Account=(null) QOS=(null) " +
		"JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:03 " +
		"Partition=inference AllocNode:Sid=localhost:13074 ReqNodeList=(null) ExcNodeList=(null) NodeList=n3 BatchHost=n3 NumNodes=1 " +
		"NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* " +
		"JOB_GRES=shard:4 Nodes=n3 CPU_IDs=0 Mem=0 GRES=" + gres + " MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) " +
		"DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/home/lab Comment=" + tail +
		" StdErr=/tmp/o StdIn=/dev/null StdOut=/tmp/o Power= TresPerNode=gres:shard:4\n"
}

// A job named (or commented) with Slurm's own words, line breaks and quotes is read
// as what Slurm gave it; today's text reader refuses the record (and the prolog with it
// drains the node).
func TestOneTextHostileNames(t *testing.T) {
	forged := " Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:80(IDX:0) MinCPUsNode=1"
	for _, name := range []string{
		"plain",
		"x MinCPUsNode=1",
		"x JOB_GRES=gpu",
		"x UserId=root(0) JobState=COMPLETED NodeList=n1",
		"x JOB_GRES=shard:80" + forged,
		"a\nJobId=9 JobName=b UserId=lab(2001) JobState=RUNNING NodeList=n3 JOB_GRES=shard:80" + forged,
		`"quoted' JobName=`,
		"",
	} {
		for _, tail := range []string{"", forged, "\nJobId=9" + forged} {
			out := record("JobId=9", name, "shard:4(IDX:1)", tail)
			j, err := OneText(out, "9", name)
			if err != nil {
				t.Errorf("name %q comment %q: %v", name, tail, err)
				continue
			}
			want := []slurmjob.Use{{Node: "n3", GPU: 1, Shards: 4}}
			if len(j.Uses) != 1 || j.Uses[0] != want[0] || j.Meta.Name != name || j.State != "RUNNING" {
				t.Errorf("name %q comment %q: %+v; want %+v", name, tail, j, want)
			}
		}
	}
	// Before the fix: the whole-line reader refuses these records.
	if js := ParseJobsText(record("JobId=9", "x MinCPUsNode=1", "shard:4(IDX:1)", "")); len(js.Bad) == 0 {
		t.Log("note: the whole-line reader read a name holding MinCPUsNode")
	}
}

// The record must be the job's own and the name the one squeue gives it.
func TestOneTextRefusesAnotherRecord(t *testing.T) {
	for _, c := range []struct{ out, id, name string }{
		{record("JobId=10", "n", "shard:4(IDX:1)", ""), "9", "n"},          // another job
		{"x\n" + record("JobId=9", "n", "shard:4(IDX:1)", ""), "9", "n"},   // not first
		{record("JobId=9", "n", "shard:4(IDX:1)", ""), "9", "m"},           // renamed
		{record("JobId=9 Comment=x", "n", "shard:4(IDX:1)", ""), "9", "n"}, // free text before the name
		{strings.Replace(record("JobId=9", "n", "shard:4(IDX:1)", ""), " MinCPUsNode=1", "", 1), "9", "n"},
	} {
		if j, err := OneText(c.out, c.id, c.name); err == nil {
			t.Errorf("OneText(%q, %s, %q) = %+v; want an error", clip(c.out), c.id, c.name, j)
		}
	}
}

// An array task and a hetjob component are read from their own record: the array's
// master id and the hetjob's leader id are also ids of the first task or component.
func TestOneSelectsTheJobsOwnRecord(t *testing.T) {
	// JSON: Slurm prints every task for the master id.
	js := `{"jobs":[{"job_id":9,"job_state":"RUNNING","nodes":"n3","gres_detail":["shard:4(4/22,0/22)"]},` +
		`{"job_id":10,"job_state":"RUNNING","nodes":"n3","gres_detail":["shard:7(0/22,7/22)"]}]}`
	dir := t.TempDir()
	r := &JobReader{Scontrol: stub(t, dir, "scontrol-json", "cat <<'EOF'\n"+js+"\nEOF\n")}
	for id, gpu := range map[string]int{"9": 0, "10": 1} {
		j, err := r.One(context.Background(), id)
		if err != nil || j.ID != id || len(j.Uses) != 1 || j.Uses[0].GPU != gpu {
			t.Errorf("One(%s) = %+v, %v", id, j, err)
		}
	}
	if _, err := r.One(context.Background(), "11"); err == nil {
		t.Errorf("One(11): a job Slurm did not print; want an error")
	}
	// Text (22.05): the task is asked by the name squeue gives it.
	rec := record("JobId=9 ArrayJobId=9 ArrayTaskId=0", "arr", "shard:4(IDX:1)", "")
	text := &JobReader{
		Scontrol: stub(t, dir, "scontrol", `case "$2" in --json) echo "scontrol: unrecognized option '--json'" >&2; exit 1;; esac
echo "$*" >> `+dir+`/asked
cat <<'EOF'
`+rec+`EOF
`),
		Squeue: stub(t, dir, "squeue", `case "$5" in "%A|%i") printf '10|9_1\n9|9_0\n';; *) echo arr;; esac`),
	}
	j, err := text.One(context.Background(), "9")
	asked, _ := os.ReadFile(dir + "/asked")
	if err != nil || j.ID != "9" || strings.TrimSpace(string(asked)) != "-d -o show job 9_0" {
		t.Fatalf("One(9) = %+v, %v (asked %q); want job 9 asked as 9_0", j, err, asked)
	}
}

func stub(t *testing.T, dir, name, body string) Runner {
	t.Helper()
	p := dir + "/" + name
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Runner{Path: p}
}

// Over several GPUs 22.05 prints only their indexes: the whole count rides along as
// Spread, so that no limit is an even split's guess.
func TestSpreadShardsKeepTheirTotal(t *testing.T) {
	u, err := nodeUses("n3", "shard:80(IDX:0-1)")
	if err != nil || len(u) != 2 || u[0].Spread != 80 || u[1].Spread != 80 {
		t.Fatalf("nodeUses = %+v, %v; want Spread 80 on GPUs 0 and 1", u, err)
	}
	u, _ = nodeUses("n3", "shard:8(IDX:1)")
	if len(u) != 1 || u[0].Spread != 0 || u[0].Shards != 8 {
		t.Fatalf("one GPU: %+v", u)
	}
}

// A hetjob leader's id names every component to squeue: its name is what is left of
// them all once the others' (each asked alone) are taken off, whatever line breaks and
// Slurm words they hold; HetJobIdSet= between the name and UserId= is Slurm's.
func TestOneHetjobLeaderName(t *testing.T) {
	dir := t.TempDir()
	leaderName, otherName := "lead\n31|x UserId=root(0)", "other\nJobId=30"
	rec := record("JobId=30 HetJobId=30 HetJobOffset=0", leaderName+" HetJobIdSet=30-31", "shard:4(IDX:1)", "")
	os.WriteFile(dir+"/rec", []byte(rec), 0o644)
	os.WriteFile(dir+"/all", []byte(leaderName+"\n"+otherName+"\n"), 0o644)
	os.WriteFile(dir+"/other", []byte(otherName+"\n"), 0o644)
	r := &JobReader{
		Scontrol: stub(t, dir, "scontrol", `case "$2" in --json) echo "scontrol: unrecognized option '--json'" >&2; exit 1;; esac
[ "$5" = "30+0" ] && cat `+dir+`/rec`),
		Squeue: stub(t, dir, "squeue", `case "$*" in
*"%A|%i"*) printf '31|30+1\n30|30+0\n';;
"-h -j 30 -S i -o %j") cat `+dir+`/all;;
"-h -j 31 -o %j") cat `+dir+`/other;;
*) echo "unexpected $*" >&2; exit 1;;
esac`),
	}
	j, err := r.One(context.Background(), "30")
	if err != nil || j.ID != "30" || j.Meta.Name != leaderName || len(j.Uses) != 1 || j.Uses[0].GPU != 1 {
		t.Fatalf("One(30) = %+v, %v", j, err)
	}
}

// ShowOwn: 22.05's text answers an array's master id with both tasks' records, which
// Show refuses; ShowOwn reads the task's own record by its squeue name instead.
func TestShowOwnReadsAnArraysFirstTask(t *testing.T) {
	dir := t.TempDir()
	t0 := record("JobId=9 ArrayJobId=9 ArrayTaskId=0", "arr", "shard:4(IDX:1)", "")
	t1 := record("JobId=10 ArrayJobId=9 ArrayTaskId=1", "arr", "shard:7(IDX:0)", "")
	r := &JobReader{
		Scontrol: stub(t, dir, "scontrol", `case "$2" in --json) echo "scontrol: unrecognized option '--json'" >&2; exit 1;; esac
case "$*" in *9_0*) cat <<'EOF'
`+t0+`EOF
;; *) cat <<'EOF'
`+t0+t1+`EOF
;; esac`),
		Squeue: stub(t, dir, "squeue", `case "$*" in *"%A|%i"*) printf '10|9_1\n9|9_0\n';; *-t*) printf '9|9_0|RUNNING\n10|9_1|RUNNING\n';; *) echo arr;; esac`),
	}
	if js, _ := r.Show(context.Background(), "9"); len(js.Jobs) != 0 {
		t.Logf("note: Show read %d records for the master id", len(js.Jobs))
	}
	js, err := r.ShowOwn(context.Background(), "9")
	j, ok := js.ByID()["9"]
	if err != nil || !ok || len(js.Jobs) != 1 || len(j.Uses) != 1 || j.Uses[0].GPU != 1 || j.Uses[0].Shards != 4 {
		t.Fatalf("ShowOwn(9) = %+v, %v; want task 0's own record: 4 shards of GPU 1", js, err)
	}
}
