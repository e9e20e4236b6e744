package fencehook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// AllocationWait bounds how long a hook waits for slurmctld to say what the job was
// given: a controller restart or failover takes some seconds, and the job waits for its
// prolog meanwhile, where a failed prolog drains the node and holds the job.
const AllocationWait = 60 * time.Second

// AllocationOf asks Slurm (ask) for the job's allocation on this node, again while
// slurmctld cannot be reached (1 s, 2 s, 4 s, then every 5 s apart, until ctx ends or
// the pauses reach AllocationWait); any other answer, a refusal included, is the answer.
func AllocationOf(ctx context.Context, ask func(context.Context) ([]fence.Slice, error), sleep func(time.Duration)) ([]fence.Slice, error) {
	var waited time.Duration
	wait := time.Second
	for {
		slices, err := ask(ctx)
		if err == nil || !errors.Is(err, slurmcli.ErrUnreachable) {
			return slices, err
		}
		// The pauses alone are bounded too: ctx holds the calls' own time.
		if ctx.Err() != nil || waited+wait > AllocationWait {
			return nil, fmt.Errorf("slurmctld unreachable for %s: %w", waited.Round(time.Second), err)
		}
		sleep(wait)
		waited += wait
		wait = min(2*wait, 5*time.Second)
	}
}

// SlicesOn is what job j holds on node, known only while Slurm says j runs there. A
// hook of a job Slurm no longer runs on the node (its extern step failed and slurmctld
// already requeued it, so the record shows it completing or pending with nothing on
// any GPU) must not read that as "nothing to fence": the step would then run its
// tasks unfenced until slurmstepd cancels it.
func SlicesOn(j slurmcli.Job, node string) ([]fence.Slice, error) {
	if j.State != "RUNNING" || !slices.Contains(j.Nodes, node) {
		state := j.State
		if state == "" {
			state = "in no state Slurm named"
		} else if state == "RUNNING" {
			state = "running on other nodes"
		}
		return nil, fmt.Errorf("Slurm says job %s is %s, not running on %s, so what it holds here is not known", j.ID, strings.ToLower(state), node)
	}
	var out []fence.Slice
	for _, u := range j.Uses {
		if u.Node == node {
			out = append(out, fence.Slice{GPU: u.GPU, Shards: u.Shards, Whole: u.Whole, Spread: u.Spread})
		}
	}
	return out, nil
}
