package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/accounting"
	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmconf"
	"github.com/gpumem/gpumem/internal/versioned"
	"github.com/gpumem/gpumem/internal/why"
)

func init() { subcommands = append(subcommands, newWhyCmd) }

type whyFlags struct {
	pol              policyFlags
	squeue, scontrol string
	desired          string
	timeout          time.Duration
	out              *output
}

func newWhyCmd() *cobra.Command {
	var f whyFlags
	cmd := &cobra.Command{
		Use:   "why JOBID",
		Short: "Why a pending gpu:mem job waits: what holds it, in order, and the largest request that would start now",
		Long: `For a pending job, say what it asks for in gpumem's words (GPU memory per GPU, as a
slice of a shared GPU, a MIG instance or whole GPUs), where it could ever run, and what
holds it now, in the order you can act on: your own hold or dependency, the partition
or reservation, quotas and QOS (GiB, as gpumemctl quota knows them), jobs of higher
priority ahead of it, then GPU memory itself: per GPU it may use how much is free and
held ("40 GiB free on n3 but no single GPU has 30"), or the MIG instances in use. Then
Slurm's own estimate of its start, the largest gpu:mem request that would start now,
and a map of those GPUs ('#' held, '.' free).

Any user may run it: it reads squeue and scontrol as you, so it shows of other users'
jobs only what Slurm shows you (PrivateData), and needs no root and no gpumemd port.`,
		Example: `  gpumemctl why 1234
  gpumemctl why 1234 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !usedJobID.MatchString(args[0]) {
				return usageError(fmt.Errorf("job id %q: want a Slurm job id such as 1234 or 1234_7 (an array's task)", args[0]))
			}
			return f.run(cmd, args[0])
		},
	}
	f.pol.addFlags(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.squeue, "squeue", "squeue", "the squeue command")
	fs.StringVar(&f.scontrol, "scontrol", "scontrol", "the scontrol command")
	fs.StringVar(&f.desired, "mig-desired", "", "directory of desired MIG layouts (gpumemctl mig plan --out), for the MIG instances planned; default: gpumem.conf's [mig] Desired")
	cliflag.DurationVar(fs, &f.timeout, "timeout", 30*time.Second, "give up on Slurm's commands after this long")
	f.out = addOutput(fs, formatTable, formatJSON)
	return cmd
}

func (f *whyFlags) run(cmd *cobra.Command, id string) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	squeue := slurmcli.Runner{Path: f.squeue, Timeout: f.timeout}
	scontrol := slurmcli.Runner{Path: f.scontrol, Timeout: f.timeout}
	q, err := slurmcli.ReadQueuedJob(ctx, squeue, id)
	if err != nil {
		return err
	}
	opt, err := f.pol.options(cmd)
	if err != nil {
		return err
	}
	unit := opt.ShardUnitMiB
	nodes, err := slurmcli.ReadNodeGres(ctx, scontrol)
	if err != nil {
		return err
	}
	in := why.Input{UnitMiB: unit, Now: time.Now()}
	in.Job = whyJob(id, q, unit, len(nodes))
	for _, n := range nodes {
		in.Nodes = append(in.Nodes, why.NodeOf(n.Name, n.State, n.Partitions, n.Gres, n.GresUsed, n.AllocTRES))
	}
	var notes []string
	if in.Job.State == "PENDING" && unknownPerGPU(in.Nodes) {
		// Slurm before 23.11 gives a node's shard use only in all: the jobs the caller
		// may see say on which GPU theirs lie.
		r := slurmcli.JobReader{Scontrol: scontrol, Squeue: squeue}
		js, err := r.Show(ctx, "")
		if err != nil {
			notes = append(notes, "running jobs not read: "+err.Error())
		}
		var vis []why.Visible
		for _, u := range js.Uses() {
			if u.Spread == 0 && !u.Whole && u.GPU != slurmcli.AnyGPU {
				vis = append(vis, why.Visible{Node: u.Node, GPU: u.GPU, Shards: u.Shards})
			}
		}
		why.AddVisible(in.Nodes, vis)
	}
	if in.Job.State == "PENDING" {
		if in.Ahead, err = ahead(ctx, squeue, in.Job, in.Nodes, unit); err != nil {
			notes = append(notes, "jobs ahead not read: "+err.Error())
		}
		if in.Quota, err = f.quota(ctx, cmd, scontrol, q); err != nil {
			notes = append(notes, "quotas not read: "+err.Error())
		}
		if in.Job.Kind == why.MIG {
			if in.Planned, err = f.planned(cmd); err != nil {
				notes = append(notes, "planned MIG layouts not read: "+err.Error())
			}
		}
	}
	e := why.Explain(in)
	w := cmd.OutOrStdout()
	if f.out.format == formatJSON {
		return writeJSON(w, versioned.NewWhy(id, q.User, q.State, q.Reason, e, notes))
	}
	writeWhy(w, id, q, e, notes)
	return nil
}

// unknownPerGPU says whether any node gives its shard use only in all.
func unknownPerGPU(nodes []why.Node) bool {
	for _, n := range nodes {
		for _, g := range n.GPUs {
			if g.Used < 0 {
				return true
			}
		}
	}
	return false
}

func writeWhy(w io.Writer, id string, q slurmcli.QueuedJob, e why.Explanation, notes []string) {
	fmt.Fprintf(w, "Job %s (user %s) is %s; Slurm's reason: %s\n", id, q.User, q.State, q.Reason)
	fmt.Fprintf(w, "It asks for: %s\n", e.Ask)
	if e.Where != "" {
		fmt.Fprintf(w, "Where: %s\n", e.Where)
	}
	fmt.Fprintln(w, "What holds it, in order:")
	for i, c := range e.Causes {
		fmt.Fprintf(w, "  %d. %s\n", i+1, c.Text)
	}
	if len(e.Map) > 0 {
		fmt.Fprintln(w, "The GPUs it may use ('#' held, '.' free), most free first:")
		for _, l := range e.Map {
			fmt.Fprintln(w, "  "+l)
		}
	}
	for _, n := range notes {
		fmt.Fprintln(w, "Note: "+n)
	}
}

// whyJob turns squeue's record into why's job. A -w or -x list is expanded up to the
// cluster's size: one naming more is left unread (Slurm refused its nodes anyway).
func whyJob(id string, q slurmcli.QueuedJob, unit int64, clusterNodes int) why.Job {
	j := why.Job{ID: id, User: q.User, State: q.State, Reason: q.Reason, Partitions: q.Partitions, Reservation: q.Reservation,
		QOS: q.QOS, Account: q.Account, Nodes: max(q.Nodes, 1), Priority: q.Priority}
	j.Kind, j.PerGPUMiB, j.GPUs, j.Type = why.AskOf(q.TRESPerNode, unit)
	if t, err := time.ParseInLocation("2006-01-02T15:04:05", q.Start, time.Local); err == nil {
		j.Start = t
	}
	hosts := func(list string) []string {
		if list == "" {
			return nil
		}
		h, err := slurmconf.ExpandHostlistMax(list, clusterNodes+1)
		if err != nil {
			return nil
		}
		return h
	}
	j.ReqNodes, j.ExcNodes = hosts(q.ReqNodes), hosts(q.ExcNodes)
	return j
}

// ahead lists the pending jobs in the job's partitions that the caller may see, with
// what each asks in GPU memory: shards at the unit, a MIG instance at its profile's
// size, a whole GPU at its shards' worth on the nodes.
func ahead(ctx context.Context, squeue slurmcli.Runner, j why.Job, nodes []why.Node, unit int64) ([]why.Ahead, error) {
	out, err := squeue.Run(ctx, "-h", "-t", "PD", "-p", strings.Join(j.Partitions, ","), "-o", "%i|%Q|%b|%D")
	if err != nil {
		return nil, err
	}
	return parseAhead(out, j, nodes, unit), nil
}

// parseAhead reads squeue's pending jobs (%i|%Q|%b|%D) into why's.
func parseAhead(out string, j why.Job, nodes []why.Node, unit int64) []why.Ahead {
	gpuMiB := map[string]int64{}
	for _, n := range nodes {
		for _, g := range n.GPUs {
			gpuMiB[g.Model] = max(gpuMiB[g.Model], g.Shards*unit)
		}
	}
	var list []why.Ahead
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 || f[0] == j.ID {
			continue
		}
		prio, _ := strconv.ParseInt(f[1], 10, 64)
		nn, _ := strconv.ParseInt(f[3], 10, 64)
		kind, per, gpus, typ := why.AskOf(f[2], unit)
		var mib int64
		switch kind {
		case why.Shard:
			mib = per
		case why.MIG:
			p, _ := mig.ProfileMiB(typ)
			mib = gpus * p
		case why.Whole:
			mib = gpus * gpuMiB[typ]
		}
		list = append(list, why.Ahead{ID: f[0], Priority: prio, MiB: mib * max(nn, 1)})
	}
	return list
}

// planned reads the desired MIG layouts, per node the instances of each profile; nil
// where the site keeps none (no directory configured, or none there).
func (f *whyFlags) planned(cmd *cobra.Command) (map[string]map[string]int, error) {
	dir := f.desired
	if dir == "" {
		if err := migDefaults(cmd, func(c config.MIG, _ func(string) bool) { dir = c.Desired }); err != nil {
			return nil, err
		}
	}
	if dir == "" {
		return nil, nil
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(names) == 0 {
		return nil, nil // none planned (or no such directory here)
	}
	ds, err := loadDesired(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for _, d := range ds {
		layouts, _, err := d.Layouts()
		if err != nil {
			return nil, err
		}
		out[d.Node] = map[string]int{}
		for _, l := range layouts {
			for _, p := range l {
				out[d.Node][p.Profile]++
			}
		}
	}
	return out, nil
}

// quota is the tightest GPU-memory quota over the job that it does not fit in now, as
// gpumemctl quota reads them; nil when none holds it.
func (f *whyFlags) quota(ctx context.Context, cmd *cobra.Command, scontrol slurmcli.Runner, q slurmcli.QueuedJob) (*why.Quota, error) {
	eq, err := f.pol.equivalents(cmd)
	if err != nil {
		return nil, err
	}
	limits, need, err := quotaLimits(ctx, scontrol, q, eq)
	if err != nil {
		return nil, err
	}
	for _, l := range limits {
		if l.Verdict(need) != "fits" {
			return &why.Quota{Name: l.What, LimitGiB: float64(l.Quota), HeldGiB: float64(l.Held), NeedGiB: float64(need)}, nil
		}
	}
	return nil, nil
}

// quotaLimits reads every GPU-memory quota over the job and what it needs, in GiB.
func quotaLimits(ctx context.Context, sc slurmcli.Runner, job slurmcli.QueuedJob, eq map[string]float64) ([]accounting.Limit, int64, error) {
	need := accounting.GresGiB(job.TRESPerNode, eq) * max(job.Nodes, 1)
	assocOut, err := sc.Run(ctx, "show", "assoc_mgr", "flags=assoc")
	if err != nil {
		return nil, 0, err
	}
	qosOut, err := sc.Run(ctx, "show", "assoc_mgr", "flags=qos", "qos="+job.QOS)
	if err != nil {
		return nil, 0, err
	}
	assocs, _, err := accounting.ParseAssocMgr(assocOut)
	if err != nil {
		return nil, 0, err
	}
	_, users, err := accounting.ParseAssocMgr(qosOut)
	if err != nil {
		return nil, 0, err
	}
	return accounting.Applies(assocs, users, job.User, job.UID, job.Account, job.QOS), need, nil
}
