package jobsummary

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// Accounting is where a summary goes: Slurm's accounting (slurmcli.Accounting).
type Accounting interface {
	Job(ctx context.Context, rawID string) (slurmcli.AcctJob, error)
	SetAdminComment(ctx context.Context, j slurmcli.AcctJob, comment string) error
}

// Outcome is what became of one try to write a summary.
type Outcome int

const (
	Written Outcome = iota // it is in the job's AdminComment (read back)
	Later                  // try again later: accounting did not answer, or has not ended the job yet
	Never                  // writing it would change what others wrote there: not written
)

// running are the states in which accounting has not ended the job yet (sacct's words).
var running = map[string]bool{"PENDING": true, "RUNNING": true, "REQUEUED": true, "RESIZING": true, "SUSPENDED": true}

// Put writes tok into job rawID's AdminComment, keeping everything else there. It
// writes only once accounting has ended the job (so slurmctld's own end-of-job record
// cannot replace it), never when sacctmgr would change others' text (its quotes become
// backticks; before 23.02, with lowercases, all of it is lowercased), and reads the
// comment back: a node of the same job writing at the same moment makes it try again.
func Put(ctx context.Context, acct Accounting, rawID, tok string, lowercases bool) (Outcome, error) {
	j, err := acct.Job(ctx, rawID)
	if err != nil {
		return Later, err
	}
	if running[j.State] {
		return Later, fmt.Errorf("job %s: accounting still has it %s", rawID, j.State)
	}
	merged, err := Merge(j.Comment, tok)
	if err != nil {
		return Never, err
	}
	if merged == j.Comment {
		return Written, nil
	}
	if strings.ContainsAny(j.Comment, `"'`) {
		return Never, errors.New("its AdminComment holds quotes, which sacctmgr would turn into backticks: left as it is")
	}
	if lowercases && j.Comment != strings.ToLower(j.Comment) {
		return Never, errors.New("its AdminComment holds capitals, and this Slurm's sacctmgr (before 23.02) lowercases all it writes: left as it is")
	}
	if err := acct.SetAdminComment(ctx, j, merged); err != nil {
		return Later, err
	}
	back, err := acct.Job(ctx, rawID)
	if err != nil {
		return Later, fmt.Errorf("written but not read back: %w", err)
	}
	if !strings.Contains(back.Comment, tok) && !(lowercases && strings.Contains(back.Comment, strings.ToLower(tok))) {
		return Later, errors.New("written, but the AdminComment read back does not hold it (another writer at the same time?)")
	}
	return Written, nil
}
