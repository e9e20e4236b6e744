package slurmcli

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The recorded hostile job: gpumemlab's `sbatch --gres=shard:4 -J 'x JobState=COMPLETED
// Nodes=n[ GRES=shard:80(80/80)' --comment ' Nodes=n3 CPU_IDs=0 Mem=0
// GRES=shard:80(80/80)'` running with 4 shards of GPU 0 on n3, in both labs.

func TestJSONIgnoresFieldsInNameAndComment(t *testing.T) {
	js, err := ParseJobsJSON([]byte(read(t, "hostile-24.11.json")))
	if err != nil || len(js.Bad) != 0 || len(js.Jobs) != 1 {
		t.Fatalf("24.11 JSON: %+v, %v", js, err)
	}
	j := js.Jobs[0]
	want := Job{ID: "1", State: "RUNNING", UID: 2001, Nodes: []string{"n3"}, Uses: []Use{{Node: "n3", GPU: 0, Shards: 4}},
		Meta: Meta{Name: "x JobState=COMPLETED Nodes=n[ GRES=shard:80(80/80)", User: "gpumemlab", Partition: "inference", Batch: BatchScript}}
	if !reflect.DeepEqual(j, want) {
		t.Errorf("job\n got %+v\nwant %+v (running, 4 shards: the name's JobState=COMPLETED and GRES=shard:80 are only a name)", j, want)
	}
}

func TestJSONOf2205Form(t *testing.T) {
	// openapi v0.0.38 (Slurm 22.05 built with its openapi plugins): job_state a string.
	doc := `{"jobs": [{"job_id": 7, "name": "a\nJobId=8", "job_state": "RUNNING", "user_id": 1001, "nodes": "n[1-2]",
		"gres_detail": ["shard:20(IDX:0)", "gpu:h100:1(IDX:1)"]}, {"job_id": 9, "job_state": "PENDING", "user_id": 1001, "nodes": "n["},
		{"job_id": "x"}]}`
	js, err := ParseJobsJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(js.Jobs) != 2 || len(js.Bad) != 1 {
		t.Fatalf("jobs %+v bad %v; want 7 and 9 read, the third record refused alone", js.Jobs, js.Bad)
	}
	want := []Use{{Node: "n1", GPU: 0, Shards: 20}, {Node: "n2", GPU: 1, Whole: true}}
	if !reflect.DeepEqual(js.Uses(), want) || js.Jobs[0].UID != 1001 {
		t.Errorf("uses %+v uid %d; want %+v, 1001", js.Uses(), js.Jobs[0].UID, want)
	}
}

func TestTextRefusesRecordsWithInjectedFields(t *testing.T) {
	for _, rel := range []string{"22.05", "24.11"} {
		js := ParseJobsText(read(t, "hostile-"+rel+".txt"))
		if len(js.Jobs) != 0 || len(js.Bad) != 1 {
			t.Fatalf("%s: jobs %+v bad %v; want the hostile record refused, not read as ended or with 80 shards", rel, js.Jobs, js.Bad)
		}
		if !strings.Contains(js.Bad[0].Error(), "job 1: JobState= appears 2 times") {
			t.Errorf("%s: error %v; want it to name the duplicated key", rel, js.Bad[0])
		}
	}
}

// A line as Slurm prints it, with NAME and COMMENT for the free text.
const textLine = "JobId=5 JobName=NAME UserId=u(1001) GroupId=u(1001) MCS_label=N/A Priority=1 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Partition=p NodeList=n3 BatchHost=n3 NumNodes=1 NumCPUs=1 TRES=cpu=1 JOB_GRES=shard:4   Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:4(4/22,0/22) MinCPUsNode=1 Features=(null) Command=(null) WorkDir=/w Comment=COMMENT StdErr=/dev/null StdOut=/dev/null TresPerNode=gres/shard:4"

func TestTextEachInjection(t *testing.T) {
	good := strings.NewReplacer("NAME", "train", "COMMENT", "ok").Replace(textLine)
	js := ParseJobsText(good)
	if len(js.Jobs) != 1 || !reflect.DeepEqual(js.Uses(), []Use{{Node: "n3", GPU: 0, Shards: 4}}) || js.Jobs[0].UID != 1001 {
		t.Fatalf("plain record: %+v %v", js.Jobs, js.Bad)
	}
	for what, text := range map[string][2]string{
		"ended by name":        {"x JobState=COMPLETED", ""},
		"80 shards by name":    {"x Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:80(80/80)", ""},
		"80 shards by comment": {"x", "y Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:80(80/80)"},
		"broken host list":     {"x Nodes=n[", ""},
		"other user by name":   {"x UserId=root(0)", ""},
		"node list by comment": {"x", "x NodeList=n[1-99999999]"},
		"GRES alone":           {"x GRES=shard:80(80/80)", ""},
		"detail end by name":   {"x MinCPUsNode=1", ""},
	} {
		line := strings.NewReplacer("NAME", text[0], "COMMENT", text[1]).Replace(textLine)
		js := ParseJobsText(line)
		if len(js.Jobs) != 0 || len(js.Bad) != 1 {
			t.Errorf("%s: read as %+v; want the record refused", what, js.Jobs)
		}
	}
	// Text that only looks like a key (no space before it) is just text.
	if js := ParseJobsText(strings.NewReplacer("NAME", "Nodes=n[", "COMMENT", "JobState=COMPLETED").Replace(textLine)); len(js.Jobs) != 1 || js.Jobs[0].State != "RUNNING" {
		t.Errorf("name Nodes=n[: %+v %v", js.Jobs, js.Bad)
	}
	// A pending job's name with a broken host list costs nothing: nothing to expand.
	pending := strings.NewReplacer("JobId=5", "JobId=6", "NAME", "x Nodes=n[", "COMMENT", "", "JobState=RUNNING", "JobState=PENDING",
		"   Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:4(4/22,0/22)", "", "NodeList=n3", "NodeList=(null)").Replace(textLine)
	if js := ParseJobsText(good + "\n" + pending); len(js.Jobs) != 2 || len(js.Bad) != 0 || len(js.Uses()) != 1 {
		t.Errorf("a pending job named Nodes=n[ cost the running one: %+v %v", js.Jobs, js.Bad)
	}
}

func TestTextLineBreakInName(t *testing.T) {
	// Recorded shape (24.11): sbatch -J $'nl\nJobId=77 x' prints the record over two
	// lines, the second starting with the name's JobId=77.
	rec := strings.NewReplacer("JobId=5 JobName=NAME", "JobId=2 JobName=nl\nJobId=77 x", "COMMENT", "").Replace(textLine)
	js := ParseJobsText(rec)
	if ids := js.ByID(); ids["2"].ID != "" {
		t.Errorf("job 2 read from its broken record: %+v", ids["2"])
	}
	// The forged JobId=77 line is read as a record; JobReader drops it against squeue.
	if len(js.Bad) == 0 {
		t.Errorf("no error for the broken record")
	}
}

func TestHostListsAreBounded(t *testing.T) {
	bomb := strings.NewReplacer("NAME", "x", "COMMENT", "", "NodeList=n3", "NodeList=n[0-9999999]").Replace(textLine)
	js := ParseJobsText(bomb)
	if len(js.Bad) != 1 || !strings.Contains(js.Bad[0].Error(), "more than 65536 hosts") {
		t.Errorf("a node list of 10M hosts: %v", js.Bad)
	}
	if _, err := slurmgres.ExpandIndex("0-99999999", MaxNodeGPUs); err == nil {
		t.Error("an index list of 100M GPUs expanded")
	}
	doc := `{"jobs": [{"job_id": 1, "job_state": ["RUNNING"], "user_id": 1, "nodes": "n[0-99999999]"}, {"job_id": 2, "job_state": ["RUNNING"], "user_id": 1, "nodes": "n1"}]}`
	js, err := ParseJobsJSON([]byte(doc))
	if err != nil || len(js.Jobs) != 1 || len(js.Bad) != 1 {
		t.Errorf("JSON with one bombed node list: %+v %v; want job 2 read and job 1 refused", js, err)
	}
}

func TestParseListPids(t *testing.T) {
	// Recorded in both labs: scontrol listpids '*' n3.
	out := "PID      JOBID    STEPID   LOCALID GLOBALID\n21656    1        batch    0       0       \n21658    1        batch    -       -       \n26045    12       0        0       0\nbogus\n"
	got, bad := ParseListPids(out)
	if !reflect.DeepEqual(got, map[int]string{21656: "1", 21658: "1", 26045: "12"}) || bad != 1 {
		t.Errorf("listpids: %v, %d bad", got, bad)
	}
}

func TestParseSummary(t *testing.T) {
	for out, shards := range map[string]int64{"2|2001|RUNNING|gres/shard:4\n": 4, "2|2001|RUNNING|gres:shard:l4_g0:7": 7, "2|2001|RUNNING|gres/gpu:h100:1": 0, "2|2001|RUNNING|N/A": 0} {
		s, err := ParseSummary(out, "2")
		if err != nil || s.UID != 2001 || s.State != "RUNNING" || s.Shards != shards {
			t.Errorf("%q: %+v %v; want uid 2001 running with %d shards", out, s, err, shards)
		}
	}
	for _, bad := range []string{"3|1|RUNNING|x", "2|x|RUNNING|N/A", "2|1|RUNNING|N/A\n2|1|RUNNING|N/A", "2|1|RUNNING"} {
		if _, err := ParseSummary(bad, "2"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestNodeState(t *testing.T) {
	nodes, err := ParseNodes("NodeName=n3 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=1 Weight=1 Owner=N/A Reason=admin: bad fan [root@2026-11-30T20:00:00]\nNodeName=n4 State=DOWN*+DRAIN Weight=5\nNodeName=n5 State=MIXED Weight=1")
	if err != nil || len(nodes) != 3 {
		t.Fatal(nodes, err)
	}
	if n := nodes[0]; n.Reason != "admin: bad fan" || !n.Flag("DRAIN") || !n.Flag("IDLE") || n.Flag("DOWN") {
		t.Errorf("n3: %+v", n)
	}
	if n := nodes[1]; !n.Flag("DOWN") || !n.Flag("DRAIN") || n.Weight != 5 {
		t.Errorf("n4: %+v", n)
	}
	if nodes[2].Flag("DRAIN") || nodes[2].Reason != "" {
		t.Errorf("n5: %+v", nodes[2])
	}
}

// TestTextMeta: user, account, QOS, partition and batch flag come from where Slurm
// prints them; a job name that repeats one of those keys leaves that field unknown
// instead of setting it.
func TestTextMeta(t *testing.T) {
	line := strings.NewReplacer("NAME", "my run", "COMMENT", "c", "Account=(null) QOS=(null)", "Account=physics QOS=long",
		"Dependency=(null)", "Dependency=(null) BatchFlag=0").Replace(textLine)
	js := ParseJobsText(line)
	if len(js.Jobs) != 1 {
		t.Fatalf("%v", js.Bad)
	}
	want := Meta{Name: "my run", User: "u", Account: "physics", QOS: "long", Partition: "p", Batch: BatchInteractive}
	if got := js.Jobs[0].Meta; got != want {
		t.Errorf("meta %+v, want %+v", got, want)
	}
	forged := strings.Replace(line, "JobName=my run", "JobName=x Account=root QOS=exempt", 1)
	forged = strings.Replace(forged, "WorkDir=/w", "WorkDir=/w BatchFlag=1 Partition=admin", 1)
	js = ParseJobsText(forged)
	if len(js.Jobs) != 1 {
		t.Fatalf("%v", js.Bad)
	}
	want = Meta{Name: "x Account=root QOS=exempt", User: "u"}
	if got := js.Jobs[0].Meta; got != want {
		t.Errorf("forged meta %+v, want %+v (each repeated key unknown, never the forged value)", got, want)
	}
}

func TestNodeGres(t *testing.T) {
	n, err := ParseNode("NodeName=n2 Arch=x86_64 CoresPerSocket=1 Gres=gpu:3g.20gb:2(S:0),gpu:1g.5gb:1 NodeAddr=127.0.0.1 State=IDLE GresUsed=gpu:0 Weight=1 Reason=x Gres=y [root@now]", "n2")
	if err != nil || n.Gres != "gpu:3g.20gb:2(S:0),gpu:1g.5gb:1" {
		t.Fatalf("%+v, %v", n, err)
	}
	if !SameGres(n.Gres, "gpu:1g.5gb:1,gpu:3g.20gb:2") || SameGres(n.Gres, "gpu:3g.20gb:2") || !SameGres("(null)", "") {
		t.Errorf("SameGres compares counts in any order, without socket suffixes")
	}
	if n, _ := ParseNode("NodeName=n3 Gres=(null) State=IDLE", "n3"); n.Gres != "" {
		t.Errorf("Gres=(null) read as %q", n.Gres)
	}
}

// 22.05's scontrol -d -o show job prints a sentence for an empty queue: no jobs, and
// nothing to warn about; the sentence inside other output is still a bad line.
func TestTextEmptyQueue(t *testing.T) {
	if js := ParseJobsText("No jobs in the system\n"); len(js.Jobs) != 0 || len(js.Bad) != 0 {
		t.Errorf("empty queue: %d jobs, bad %v", len(js.Jobs), js.Bad)
	}
	if js := ParseJobsText("No jobs in the system\nNo jobs in the system\n"); len(js.Bad) != 2 {
		t.Errorf("the sentence twice: bad %v, want both lines refused", js.Bad)
	}
}

// TestSqueueSaysWhatAJobHoldsPerNode: squeue's GRES per node, for a job whose scontrol
// record cannot be read: shards (typed or not) and whole GPUs, none on a GPU it names.
func TestSqueueSaysWhatAJobHoldsPerNode(t *testing.T) {
	sum, err := ParseSummary("7|1001|RUNNING|gres/gpu:h100:2,gres/shard:l4_g0:4,gres:tmpfs:1\n", "7")
	if err != nil || sum.GPUs != 2 || sum.Shards != 4 || sum.UID != 1001 {
		t.Errorf("summary %+v %v; want 2 GPUs and 4 shards", sum, err)
	}
	jobs := parseRunning("7|RUNNING|n[1-2]|gres:gpu:1\n8|SUSPENDED|n3|gres/shard:h100_g1:20\nforged line\n9_1|RUNNING|n1|gres:gpu:1\n")
	if len(jobs) != 2 {
		t.Fatalf("jobs %+v; want 7 and 8 (an array task's %%i form and other lines confirm nothing)", jobs)
	}
	j, err := jobs["7"].job()
	want := []Use{{Node: "n1", GPU: AnyGPU, Whole: true}, {Node: "n2", GPU: AnyGPU, Whole: true}}
	if err != nil || !reflect.DeepEqual(j.Uses, want) {
		t.Errorf("job 7 uses %+v %v; want %+v", j.Uses, err, want)
	}
	j, _ = jobs["8"].job()
	if want := []Use{{Node: "n3", GPU: AnyGPU, Shards: 20, Type: "h100_g1"}}; !reflect.DeepEqual(j.Uses, want) {
		t.Errorf("job 8 uses %+v; want %+v", j.Uses, want)
	}
	if _, err := (queued{ID: "10", Nodes: "n1", PerNode: "gres/gpu:99999"}).job(); err == nil {
		t.Errorf("99999 GPUs a node read as a job")
	}
}
