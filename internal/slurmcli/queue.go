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

// QueuedJob is one job as squeue lists it for a quota or for why it waits: who runs
// it, under which association and QOS, why it waits, what it asks per node, and where.
type QueuedJob struct {
	User, UID, Account, QOS, State, Reason string
	Nodes                                  int64  // 0 when squeue prints no count
	TRESPerNode                            string // %b: "gres:shard:20", "gres/gpu:3g.20gb:1", ...
	Partitions                             []string
	Reservation                            string // "" for none
	Priority                               int64
	Start                                  string // %S: Slurm's expected start, "N/A" when it has none
	ReqNodes, ExcNodes                     string // hostlists of -w and -x, "" for none
}

// queuedJobFormat holds only fields a user cannot fill with free text (no job name, no
// comment), so "|" splits them.
const queuedJobFormat = "%u|%U|%a|%q|%T|%r|%D|%b|%P|%v|%Q|%S|%n|%x"

// ReadQueuedJob asks squeue for job id.
func ReadQueuedJob(ctx context.Context, squeue Runner, id string) (QueuedJob, error) {
	out, err := squeue.Run(ctx, "-h", "-j", id, "-o", queuedJobFormat)
	if err != nil {
		return QueuedJob{}, err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	f := strings.Split(line, "|")
	if len(f) != 14 {
		return QueuedJob{}, fmt.Errorf("job %s: not in the queue, or not yours to see (squeue printed %q)", id, clip(line))
	}
	j := QueuedJob{User: f[0], UID: f[1], Account: f[2], QOS: f[3], State: f[4], Reason: f[5], TRESPerNode: f[7],
		Partitions: strings.Split(f[8], ","), Reservation: none(f[9]), Start: f[11], ReqNodes: none(f[12]), ExcNodes: none(f[13])}
	j.Nodes, _ = strconv.ParseInt(f[6], 10, 64)
	j.Priority, _ = strconv.ParseInt(f[10], 10, 64)
	return j, nil
}

// none is "" for squeue's ways of printing nothing.
func none(s string) string {
	if s == "(null)" || s == "N/A" {
		return ""
	}
	return s
}
