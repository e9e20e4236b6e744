package main

import (
	"context"
	"fmt"
	"github.com/gpumem/gpumem/internal/advise"
	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/history/api"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/units"
	"github.com/gpumem/gpumem/internal/versioned"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newAdviseCmd) }

func newAdviseCmd() *cobra.Command {
	var f jobsFlags
	var o advise.Options
	var out *output
	var running bool
	cmd := &cobra.Command{
		Use:         "advise",
		Annotations: manExitStatus(nodesExitStatus),
		Short:       "Right-size gpu:mem requests from every node's job history: asked vs peak, the size that holds p95, GiB-hours over-asked",
		Long: `Reads the job history of every node's gpumemd (--url, one per node), counts each job
once however many nodes it ran on, and for each user, account or job name (--by)
prints what its jobs asked per GPU (median), their peak per GPU (median, --percentile,
maximum), the gpu:mem size that would have held --percentile of them (whole shard
units), and the GiB-hours the asking beyond the peak held from other jobs. Only shard
jobs count: a whole GPU or MIG instance is the device's size whatever was asked. Jobs
still running are left out unless --running. Groups are sorted by GiB-hours over-asked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := confShardUnit(cmd, &o.UnitMiB); err != nil {
				return err
			}
			clients, err := f.clients()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			jobs, left, err := collectHistory(ctx, cmd.ErrOrStderr(), clients, time.Now().Add(-f.since).Unix(), f.limit, running)
			if err != nil {
				return err
			}
			rows, err := advise.Advise(jobs, o)
			if err != nil {
				return err
			}
			return thenLeft(printAdvice(cmd.OutOrStdout(), rows, o, out.format), left)
		},
	}
	fs := cmd.Flags()
	f.addFlags(fs, 7*24*time.Hour, 10000)
	o.By = "user"
	fs.Var(cliflag.NewChoice(&o.By, "user", "account", "name"), "by", "group jobs by user, account or name (the job name)")
	fs.Float64Var(&o.Percentile, "percentile", 95, "the share of a group's jobs (by peak) the advised size must hold")
	fs.IntVar(&o.MinJobs, "min-jobs", 3, "groups with fewer jobs get no advised size")
	o.UnitMiB = shard.DefaultUnitMiB
	addShardUnit(fs, &o.UnitMiB, "sizes are advised in whole units of this, as gpumem.conf ShardUnit")
	addConfig(fs)
	fs.BoolVar(&running, "running", false, "count jobs still running too")
	out = addOutput(fs, formatTable, formatJSON, formatCSV)
	return cmd
}

// collectHistory reads every node's jobs; a node that does not answer is warned about
// and left out (left: status 1 after the advice is printed), never silently.
func collectHistory(ctx context.Context, errOut io.Writer, clients []api.Client, since int64, limit int, running bool) (jobs []advise.NodeJob, left, err error) {
	left, err = askEach(errOut, clients, func(c api.Client) error {
		l, err := c.Jobs(ctx, since, limit)
		if err != nil {
			return err
		}
		for _, j := range l.Jobs {
			if running || !j.Running {
				jobs = append(jobs, advise.NodeJob{Node: jobHost(c.Base), Job: j})
			}
		}
		return nil
	})
	return jobs, left, err
}

func printAdvice(w io.Writer, groups []advise.Row, o advise.Options, format string) error {
	switch format {
	case formatJSON:
		return writeJSON(w, versioned.NewAdvise(o.By, o.Percentile, groups))
	case formatCSV:
		// The JSON's names and raw bytes, for a spreadsheet.
		r := rows{head: []string{o.By, "jobs", "asked_bytes", "peak_p50_bytes", "peak_pct_bytes", "peak_max_bytes", "advised", "over_asked_gib_hours"}}
		for _, g := range groups {
			r.add(g.Group, strconv.Itoa(g.Jobs), strconv.FormatInt(g.AskedBytes, 10), strconv.FormatInt(g.PeakP50Bytes, 10),
				strconv.FormatInt(g.PeakPctBytes, 10), strconv.FormatInt(g.PeakMaxBytes, 10), g.Advised, strconv.FormatFloat(g.OverGiBHours, 'f', 3, 64))
		}
		return r.write(w, formatCSV)
	}
	r := rows{head: []string{map[string]string{"user": "USER", "account": "ACCOUNT", "name": "JOB NAME"}[o.By], "JOBS", "ASKED",
		"PEAK p50", fmt.Sprintf("PEAK p%g", o.Percentile), "PEAK MAX", "ADVISED", "OVER-ASKED GiB·h"}}
	for _, g := range groups {
		adv := "-"
		if g.Advised != "" {
			adv = "gpu:mem:" + g.Advised
		}
		r.add(g.Group, strconv.Itoa(g.Jobs), units.ShortGiB(float64(g.AskedBytes)), units.ShortGiB(float64(g.PeakP50Bytes)),
			units.ShortGiB(float64(g.PeakPctBytes)), units.ShortGiB(float64(g.PeakMaxBytes)), adv, fmt.Sprintf("%.1f", g.OverGiBHours))
	}
	return r.write(w, formatTable)
}
