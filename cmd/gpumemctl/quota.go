package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/accounting"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/versioned"
)

func init() { subcommands = append(subcommands, newQuotaCmd) }

func newQuotaCmd() *cobra.Command {
	var (
		pol             policyFlags
		queue, scontrol string
		out             *output
	)
	cmd := &cobra.Command{
		Use:   "quota JOBID",
		Short: "Say which GPU-memory quota holds a job, how much of it is held and how much is left",
		Long: `For a job, list every GPU-memory quota that applies to it (its user's association,
its account and the parents of that account, its QOS's per-user limit) with its size,
what the running jobs under it hold and what is left, in GiB, next to what the job needs
(its GRES at their GiB equivalents, gpumemctl policy). Slurm's own reason for such a wait
is AssocGrpBilling or QOSMaxBillingPerUser; this says what it means. Any user may run it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if _, err := strconv.ParseUint(id, 10, 64); err != nil {
				return usageError(fmt.Errorf("job id %q: want a Slurm job number such as 1234", id))
			}
			eq, err := pol.equivalents(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			job, err := slurmcli.ReadQueuedJob(ctx, slurmcli.Runner{Path: queue}, id)
			if err != nil {
				return err
			}
			user, account, qos, state, reason := job.User, job.Account, job.QOS, job.State, job.Reason
			limits, need, err := quotaLimits(ctx, slurmcli.Runner{Path: scontrol}, job, eq)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.format == formatJSON {
				return writeQuotaJSON(w, versioned.NewQuota(id, user, account, qos, state, reason, need), limits)
			}
			fmt.Fprintf(w, "job %s (user %s, account %s, QOS %s): %s, reason %s; it needs %d GiB of GPU memory\n", id, user, account, qos, state, reason, need)
			if len(limits) == 0 {
				fmt.Fprintln(w, "no GPU-memory quota applies to it")
				return nil
			}
			for _, l := range accounting.Explain(limits, need) {
				fmt.Fprintln(w, "  "+l)
			}
			return nil
		},
	}
	pol.addFlags(cmd)
	fs := cmd.Flags()
	fs.StringVar(&queue, "squeue", "squeue", "the squeue command")
	fs.StringVar(&scontrol, "scontrol", "scontrol", "the scontrol command")
	out = addOutput(fs, formatTable, formatJSON)
	return cmd
}

func writeQuotaJSON(w io.Writer, j versioned.QuotaDoc, limits []accounting.Limit) error {
	j.Quotas = []versioned.QuotaLine{}
	for _, l := range limits {
		j.Quotas = append(j.Quotas, versioned.QuotaLine{What: l.What, SizeGiB: l.Quota, HeldGiB: l.Held, LeftGiB: l.Left(), Verdict: l.Verdict(j.NeedGiB)})
	}
	return writeJSON(w, j)
}
