package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Accounting reads and writes one job's AdminComment in Slurm's accounting (slurmdbd),
// where it outlives the job, its node and slurmctld's memory of it: sacct to read,
// sacctmgr to write (scontrol refuses to change a job that has ended).
type Accounting struct {
	Sacct, Sacctmgr Runner
}

// AccountingBeside is Accounting with the sacct and sacctmgr beside scontrol.
func AccountingBeside(scontrol string) Accounting {
	return Accounting{Sacct: Runner{Path: beside(scontrol, "sacct")}, Sacctmgr: Runner{Path: beside(scontrol, "sacctmgr")}}
}

// AcctJob is a job as accounting holds it.
type AcctJob struct {
	RawID   string // JobIDRaw
	ID      string // JobID as sacct prints it: 123, 123_4 (an array's task), 123+1
	State   string // sacct's State, e.g. COMPLETED, CANCELLED by 0, RUNNING
	Elapsed string // sacct's Elapsed, e.g. 01:02:03, 1-00:00:00
	Comment string // AdminComment
}

// ErrNotInAccounting is returned (wrapped) for a job sacct does not list (yet).
var ErrNotInAccounting = errors.New("not in Slurm's accounting")

// AcctFormat is what Job asks sacct for: the AdminComment last, so a '|' in it is its
// own; a line break in it (only an admin can write one) continues its record.
const AcctFormat = "JobIDRaw,JobID,State,Elapsed,AdminComment"

// Job reads job rawID's latest record. rawID is a job id as slurmctld numbers jobs.
func (a Accounting) Job(ctx context.Context, rawID string) (AcctJob, error) {
	out, err := a.Sacct.Run(ctx, "-j", rawID, "-X", "-n", "-P", "--format="+AcctFormat)
	if err != nil {
		return AcctJob{}, err
	}
	j, ok := ParseAcctJob(out, rawID)
	if !ok {
		return AcctJob{}, fmt.Errorf("job %s: %w", rawID, ErrNotInAccounting)
	}
	return j, nil
}

var acctRecord = regexp.MustCompile(`^([0-9]+)\|([0-9_+\[\]%,-]+)\|([A-Z_]+(?: by [0-9]+)?)\|([0-9:-]*)\|`)

// ParseAcctJob finds job rawID's record in sacct's -P output of AcctFormat (sacct -j
// with an array's id lists every task: only the one numbered rawID is taken).
func ParseAcctJob(out, rawID string) (AcctJob, bool) {
	for _, j := range ParseAcctJobs(out) {
		if j.RawID == rawID {
			return j, true
		}
	}
	return AcctJob{}, false
}

// ParseAcctJobs reads every record of sacct's -P output of AcctFormat, in its order.
func ParseAcctJobs(out string) []AcctJob {
	var js []AcctJob
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if m := acctRecord.FindStringSubmatch(line); m != nil {
			js = append(js, AcctJob{RawID: m[1], ID: m[2], State: m[3], Elapsed: m[4], Comment: line[len(m[0]):]})
			continue
		}
		if len(js) > 0 {
			js[len(js)-1].Comment += "\n" + line
		}
	}
	return js
}

// Key is how sacctmgr names the job: an array task by array id and task (a bare id
// would be the whole array's), any other job by its own number.
func (j AcctJob) Key() string {
	if strings.Contains(j.ID, "_") && !strings.ContainsAny(j.ID, "[%") {
		return j.ID
	}
	return j.RawID
}

// SetAdminComment replaces the job's AdminComment in accounting.
func (a Accounting) SetAdminComment(ctx context.Context, j AcctJob, comment string) error {
	_, err := a.Sacctmgr.Run(ctx, "-i", "modify", "job", "where", "jobid="+j.Key(), "set", "AdminComment="+comment)
	return err
}

// Version is sacctmgr's -V, e.g. "slurm 22.05.8".
func (a Accounting) Version(ctx context.Context) (string, error) {
	out, err := a.Sacctmgr.Run(ctx, "-V")
	return strings.TrimSpace(out), err
}
