package slurmcli_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// fakeSqueue is a Slurm client (squeue, or scontrol) that notes its arguments in DIR/args and prints out.
func fakeSqueue(t *testing.T, out string) (slurmcli.Runner, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(dir, "args")
	p := filepath.Join(dir, "squeue")
	body := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> " + args + "; done\ncat " + filepath.Join(dir, "out") + "\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return slurmcli.Runner{Path: p}, args
}

func argsOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\n", " "))
}

// One query serves every reader of the pending jobs, and asks squeue only for fields
// Slurm validates: no job name, comment or other text a user writes.
func TestReadPendingOneQuery(t *testing.T) {
	for _, free := range []string{"%j", "%k", "%o", "%Z", "%E", "%y"} {
		if strings.Contains(slurmcli.PendingFormat, free) {
			t.Errorf("PendingFormat %q prints %s, text a user chooses", slurmcli.PendingFormat, free)
		}
	}
	r, args := fakeSqueue(t, "21|gpu|gres/shard:12|(null)|2026-11-30T20:00:00\n22|gpu|gres/gpu:3g.20gb:2|n1|2026-11-30T20:00:01\n23|gpu|gres/gpu:1|(null)|2026-11-30T20:00:02\n")
	q, err := slurmcli.ReadPending(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got := argsOf(t, args); got != "-h -t PD -o %i|%P|%b|%n|%V" {
		t.Errorf("squeue %s", got)
	}
	shards, err := q.Shards(time.UTC)
	if want := []slurmcli.Pending{{ID: "21", Partitions: []string{"gpu"}, Shards: 12, Submitted: time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)}}; err != nil || !reflect.DeepEqual(shards, want) {
		t.Errorf("Shards = %+v, %v; want %+v", shards, err, want)
	}
	gres, err := q.GRES(time.UTC)
	if err != nil || len(gres) != 1 || gres[0].ID != "22" || gres[0].TRES != "gres/gpu:3g.20gb:2" {
		t.Errorf("GRES = %+v, %v", gres, err)
	}
	types, err := q.GPUTypes()
	if want := []slurmcli.PendingGPU{{ID: "22", Type: "3g.20gb", Count: 2}}; err != nil || !reflect.DeepEqual(types, want) {
		t.Errorf("GPUTypes = %+v, %v; want %+v", types, err, want)
	}
}

// A line that does not split into the format's fields (as if a field held the
// separator) fails every reader: no reader takes a shifted field for another.
func TestReadPendingRefusesShiftedFields(t *testing.T) {
	for _, line := range []string{
		"21|gpu|x|gres/shard:12|(null)|2026-11-30T20:00:00\n", // six fields
		"21|gpu|gres/shard:12|n1\n",                           // four
		"21|gpu\n",
	} {
		r, _ := fakeSqueue(t, line)
		q, err := slurmcli.ReadPending(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Shards(time.UTC); err == nil || !strings.Contains(err.Error(), "want JOBID|PARTITIONS|TRES_PER_NODE") {
			t.Errorf("Shards(%q): %v", line, err)
		}
		if _, err := q.GRES(time.UTC); err == nil {
			t.Errorf("GRES(%q) accepted", line)
		}
		if _, err := q.GPUTypes(); err == nil {
			t.Errorf("GPUTypes(%q) accepted", line)
		}
	}
	// A bad GPU count fails the reader that reads it, not the others.
	r, _ := fakeSqueue(t, "21|gpu|gres/shard:12|(null)|2026-11-30T20:00:00\n22|gpu|gpu:3g.20gb:99999|(null)|2026-11-30T20:00:01\n")
	q, _ := slurmcli.ReadPending(context.Background(), r)
	if _, err := q.GPUTypes(); err == nil {
		t.Error("GPUTypes took 99999 GPUs")
	}
	if s, err := q.Shards(time.UTC); err != nil || len(s) != 1 {
		t.Errorf("Shards = %v, %v; a GPU count it does not read failed it", s, err)
	}
}

func TestPendingReasons(t *testing.T) {
	r, args := fakeSqueue(t, "Resources\nPriority\n\nPriority\n")
	got, err := slurmcli.PendingReasons(context.Background(), r)
	if want := map[string]int{"Resources": 1, "Priority": 2}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("PendingReasons = %v, %v; want %v", got, err, want)
	}
	if a := argsOf(t, args); a != "-h -t PD -o %r" {
		t.Errorf("squeue %s", a)
	}
	r, _ = fakeSqueue(t, "")
	if got, err := slurmcli.PendingReasons(context.Background(), r); err != nil || got == nil || len(got) != 0 {
		t.Errorf("nothing pending: %v, %v; want an empty count", got, err)
	}
}

func TestReadQueuedJob(t *testing.T) {
	r, args := fakeSqueue(t, "alice|1000|physics|normal|PENDING|AssocGrpBilling|2|gres/shard:20|gpu,train|maint|4294|2026-12-06T13:30:00|n[1-2]|n3\n")
	j, err := slurmcli.ReadQueuedJob(context.Background(), r, "42")
	want := slurmcli.QueuedJob{User: "alice", UID: "1000", Account: "physics", QOS: "normal", State: "PENDING", Reason: "AssocGrpBilling", Nodes: 2, TRESPerNode: "gres/shard:20",
		Partitions: []string{"gpu", "train"}, Reservation: "maint", Priority: 4294, Start: "2026-12-06T13:30:00", ReqNodes: "n[1-2]", ExcNodes: "n3"}
	if err != nil || !reflect.DeepEqual(j, want) {
		t.Errorf("ReadQueuedJob = %+v, %v; want %+v", j, err, want)
	}
	if a := argsOf(t, args); a != "-h -j 42 -o %u|%U|%a|%q|%T|%r|%D|%b|%P|%v|%Q|%S|%n|%x" {
		t.Errorf("squeue %s", a)
	}
	// As 22.05 prints a held job without reservation, start or node lists.
	r, _ = fakeSqueue(t, "gpumemlab|2001|teama|normal|PENDING|JobHeldUser|1|gres:shard:30|gpu|(null)|0|N/A||\n")
	if j, err := slurmcli.ReadQueuedJob(context.Background(), r, "42"); err != nil || j.Reservation != "" || j.ReqNodes != "" || j.Start != "N/A" {
		t.Errorf("22.05's held job: %+v, %v", j, err)
	}
	for _, out := range []string{"", "alice|1000|physics|normal|PENDING|AssocGrpBilling|2|gres/shard:20|x\n"} {
		r, _ := fakeSqueue(t, out)
		if _, err := slurmcli.ReadQueuedJob(context.Background(), r, "42"); err == nil || !strings.Contains(err.Error(), "job 42: not in the queue, or not yours to see (squeue printed") {
			t.Errorf("squeue printed %q: %v", out, err)
		}
	}
}
