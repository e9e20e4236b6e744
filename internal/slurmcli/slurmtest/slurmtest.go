// Package slurmtest stands in for Slurm's client commands in unit tests: scontrol and
// squeue scripts that answer from files the test writes, in the shapes recorded from
// the 22.05 and 24.11 labs, and log every call. The lab's e2e tests run the real ones.
package slurmtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// Job is one running job as Slurm would report it.
type Job struct {
	ID     string
	UID    int
	Name   string // free text, printed as Slurm prints it
	Node   string
	GPU    int   // the GPU index its shards are on
	Shards int   // 0 for a whole GPU
	PIDs   []int // the processes listpids names for it
	// Account, QOS and Interactive are Slurm's fields of the job (user "u", partition "p").
	Account, QOS string
	Interactive  bool
}

// Slurm is one fake cluster: its scripts and their files.
type Slurm struct {
	Dir              string
	Scontrol, Squeue string
	Scancel          string // logs its calls as "scancel ARGS"
	t                testing.TB
}

// New writes the scripts into a temporary directory. With text, scontrol has no --json,
// as Debian's 22.05.
func New(t testing.TB, text bool) *Slurm {
	t.Helper()
	dir := t.TempDir()
	s := &Slurm{Dir: dir, Scontrol: filepath.Join(dir, "scontrol"), Squeue: filepath.Join(dir, "squeue"), t: t}
	if text {
		s.file("nojson", "")
	}
	s.file("node.state", "IDLE")
	write(t, s.Scontrol, fmt.Sprintf(scontrolScript, dir), 0o755)
	write(t, s.Squeue, fmt.Sprintf(squeueScript, dir), 0o755)
	s.Scancel = filepath.Join(dir, "scancel")
	write(t, s.Scancel, fmt.Sprintf("#!/bin/sh\nprintf 'scancel %%s\\n' \"$*\" >> %s/calls.log\n", dir), 0o755)
	s.SetJobs()
	return s
}

const scontrolScript = `#!/bin/sh
D=%s
printf '%%s\n' "$*" >> $D/calls.log
[ -f $D/hang ] && sleep 30
case "$1" in
listpids) [ -f $D/listpids.fail ] && { echo "slurm_load_job error" >&2; exit 1; }
	echo "PID      JOBID    STEPID   LOCALID GLOBALID"
	if [ "$2" = "*" ]; then cat $D/listpids; else grep " $2 " $D/listpids; fi; exit 0 ;;
notify|requeue) exit 0 ;;
update) case "$3" in
	state=drain) printf '%%s' "${4#reason=}" > $D/node.reason; printf '%%s+DRAIN' "$(cat $D/node.base 2>/dev/null || echo IDLE)" > $D/node.state ;;
	state=resume) rm -f $D/node.reason; cat $D/node.base 2>/dev/null > $D/node.state || echo IDLE > $D/node.state ;;
	esac; exit 0 ;;
show) r=""; [ -f $D/node.reason ] && r=" Reason=$(cat $D/node.reason) [root@2026-11-30T20:00:00]"
	g=""; [ -f $D/node.gres ] && g=" Gres=$(cat $D/node.gres)"
	echo "NodeName=$3 Arch=x86_64 CoresPerSocket=1$g State=$(cat $D/node.state) ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A$r"; exit 0 ;;
-d) if [ "$2" = --json ]; then
		[ -f $D/nojson ] && { echo "scontrol: unrecognized option '--json'" >&2; exit 1; }
		if [ -n "$5" ]; then cat $D/job-$5.json 2>/dev/null || echo '{"jobs": []}'; else cat $D/jobs.json; fi
	else
		if [ -n "$5" ]; then cat $D/job-$5.txt 2>/dev/null; else cat $D/jobs.txt; fi
	fi; exit 0 ;;
esac
echo "scontrol: unknown command $*" >&2; exit 1
`

const squeueScript = `#!/bin/sh
D=%s
printf 'squeue %%s\n' "$*" >> $D/calls.log
case "$*" in
*"-j "*) id=$(echo "$*" | sed 's/.*-j \([0-9]*\).*/\1/'); grep "^$id|" $D/summary; exit 0 ;;
*) cat $D/running; exit 0 ;;
esac
`

// SetJobs makes jobs Slurm's running jobs: listpids, scontrol show job (JSON and
// text, whole list and one job) and squeue (one job as SummaryFormat, the running
// jobs as RunningFormat) answer with them.
func (s *Slurm) SetJobs(jobs ...Job) {
	var pids, summary, running, text strings.Builder
	var all []any
	for _, j := range jobs {
		for _, p := range j.PIDs {
			fmt.Fprintf(&pids, "%-8d %-8s batch    0       0\n", p, j.ID)
		}
		gres := s.gres(j)
		fmt.Fprintf(&summary, "%s|%d|RUNNING|%s\n", j.ID, j.UID, perNode(j))
		fmt.Fprintf(&running, "%s|RUNNING|%s|%s\n", j.ID, j.Node, perNode(j))
		batch := 1
		if j.Interactive {
			batch = 0
		}
		line := fmt.Sprintf("JobId=%s JobName=%s UserId=u(%d) GroupId=u(%d) MCS_label=N/A Priority=1 Nice=0 Account=%s QOS=%s JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=%d Partition=p NodeList=%s BatchHost=%s NumNodes=1 NumCPUs=1 TRES=cpu=1 JOB_GRES=%s   Nodes=%s CPU_IDs=0 Mem=0 GRES=%s MinCPUsNode=1 Features=(null) Command=(null) WorkDir=/tmp StdErr=/dev/null StdOut=/dev/null TresPerNode=%s\n",
			j.ID, j.Name, j.UID, j.UID, orNull(j.Account), orNull(j.QOS), batch, j.Node, j.Node, strings.SplitN(gres, "(", 2)[0], j.Node, gres, perNode(j))
		text.WriteString(line)
		s.file("job-"+j.ID+".txt", line)
		rec := map[string]any{"job_id": atoi(j.ID), "name": j.Name, "job_state": []string{"RUNNING"}, "user_id": j.UID,
			"nodes": j.Node, "gres_detail": []string{gres}, "comment": j.Name,
			"user_name": "u", "account": j.Account, "qos": j.QOS, "partition": "p", "batch_flag": !j.Interactive}
		all = append(all, rec)
		s.file("job-"+j.ID+".json", mustJSON(map[string]any{"jobs": []any{rec}}))
	}
	if all == nil {
		all = []any{}
	}
	s.file("listpids", pids.String())
	s.file("summary", summary.String())
	s.file("running", running.String())
	s.file("jobs.txt", text.String())
	s.file("jobs.json", mustJSON(map[string]any{"jobs": all}))
}

// SetJobText replaces what `scontrol -d -o show job ID` prints, as a hostile record.
func (s *Slurm) SetJobText(id, text string) { s.file("job-"+id+".txt", text) }

// SetGres sets the Gres= slurmctld reports for the node, as slurm.conf's would be once
// slurmctld read it.
func (s *Slurm) SetGres(gres string) { s.file("node.gres", gres) }

// SetNode sets the node's base state and, when reason is not empty, an admin's drain.
func (s *Slurm) SetNode(base, reason string) {
	s.file("node.base", base)
	if reason == "" {
		os.Remove(filepath.Join(s.Dir, "node.reason"))
		s.file("node.state", base)
		return
	}
	s.file("node.reason", reason)
	s.file("node.state", base+"+DRAIN")
}

// Fail makes listpids fail (slurmd unreachable).
func (s *Slurm) Fail(on bool) { s.toggle("listpids.fail", on) }

// Hang makes every scontrol call sleep 30s first.
func (s *Slurm) Hang(on bool) { s.toggle("hang", on) }

// Calls are the command lines run so far, one a line.
func (s *Slurm) Calls() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "calls.log"))
	return string(b)
}

func (s *Slurm) toggle(name string, on bool) {
	if on {
		s.file(name, "")
	} else {
		os.Remove(filepath.Join(s.Dir, name))
	}
}

func (s *Slurm) gres(j Job) string {
	if j.Shards == 0 {
		d := slurmgres.Detail{Indexed: true, Index: []int{j.GPU}}
		return slurmgres.Item{Name: slurmgres.GPU, Type: "h100", Count: 1, Counted: true, Detail: d.String()}.String()
	}
	d := slurmgres.Detail{Taken: make([]int64, 4), Total: []int64{80, 80, 80, 80}}
	d.Taken[j.GPU] = int64(j.Shards)
	return slurmgres.Item{Name: slurmgres.Shard, Count: int64(j.Shards), Counted: true, Detail: d.String()}.String()
}

func perNode(j Job) string {
	it := slurmgres.Of(slurmgres.Shard, "", int64(j.Shards))
	if j.Shards == 0 {
		it = slurmgres.Of(slurmgres.GPU, "h100", 1)
	}
	it.Prefix = slurmgres.Slash
	return it.String()
}

func (s *Slurm) file(name, content string) {
	s.t.Helper()
	write(s.t, filepath.Join(s.Dir, name), content, 0o644)
}

func write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func orNull(v string) string {
	if v == "" {
		return "(null)"
	}
	return v
}
