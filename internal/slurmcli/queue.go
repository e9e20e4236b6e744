package slurmcli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// PendingReasons counts the pending jobs by Slurm's reason for their wait (%r, one of
// Slurm's own words: no user text).
func PendingReasons(ctx context.Context, squeue Runner) (map[string]int, error) {
	out, err := squeue.Run(ctx, "-h", "-t", "PD", "-o", "%r")
	if err != nil {
		return nil, err
	}
	reasons := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			reasons[l]++
		}
	}
	return reasons, nil
}

// QueuedJob is one job as squeue lists it for a quota: who runs it, under which
// association and QOS, why it waits and what it asks per node.
type QueuedJob struct {
	User, UID, Account, QOS, State, Reason string
	Nodes                                  int64  // 0 when squeue prints no count
	TRESPerNode                            string // %b: "gres:shard:20", "gres/gpu:3g.20gb:1", ...
}

// queuedJobFormat holds only fields a user cannot fill with free text (no job name, no
// comment), so "|" splits them.
const queuedJobFormat = "%u|%U|%a|%q|%T|%r|%D|%b"

// ReadQueuedJob asks squeue for job id.
func ReadQueuedJob(ctx context.Context, squeue Runner, id string) (QueuedJob, error) {
	line, err := squeue.Run(ctx, "-h", "-j", id, "-o", queuedJobFormat)
	if err != nil {
		return QueuedJob{}, err
	}
	f := strings.Split(strings.TrimSpace(line), "|")
	if len(f) != 8 {
		return QueuedJob{}, fmt.Errorf("job %s: not in the queue (squeue printed %q)", id, strings.TrimSpace(line))
	}
	j := QueuedJob{User: f[0], UID: f[1], Account: f[2], QOS: f[3], State: f[4], Reason: f[5], TRESPerNode: f[7]}
	j.Nodes, _ = strconv.ParseInt(f[6], 10, 64)
	return j, nil
}
