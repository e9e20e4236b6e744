package main

import (
	"fmt"
	"github.com/gpumem/gpumem/internal/units"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/accounting"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

func init() { subcommands = append(subcommands, newPolicyCmd) }

type policyFlags struct {
	src    nodeSource
	shards shardFlags
	quotas []string
	print  string
}

func newPolicyCmd() *cobra.Command {
	var f policyFlags
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Print the Slurm accounting lines that make GPU memory (GiB) a quota, a bill and a report unit",
		Long: `Print, from the GPU inventory, the slurm.conf and sacctmgr lines that make Slurm's
billing TRES count GiB of GPU memory: AccountingStorageTRES with gres/shard, every MIG
profile and every whole-GPU type; TRESBillingWeights giving each its GiB (a shard its
unit, a MIG instance the size its profile is named for, a whole GPU all its shards); and,
for each --quota, the sacctmgr command that caps billing, so a quota in GiB holds for
slices, MIG instances and whole GPUs alike. See docs/policy.md.

--print tres or --print weights prints only that value, for scripts.`,
		Example: `  gpumemctl policy --inventory /etc/slurm/gpumem.d --quota account:teama=160g --quota qos:normal=80g
  gpumemctl policy --inventory /etc/slurm/gpumem.d --print weights`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	f.addFlags(cmd)
	fs := cmd.Flags()
	fs.StringArrayVar(&f.quotas, "quota", nil, "a GPU-memory quota: account:NAME=SIZE, user:NAME@ACCOUNT=SIZE or qos:NAME=SIZE (per user); repeatable")
	fs.StringVar(&f.print, "print", "all", "all, tres (AccountingStorageTRES's value) or weights (TRESBillingWeights's value)")
	return cmd
}

// addFlags adds the flags naming the inventory and how its GRES are named, which
// policy, report and quota share.
func (f *policyFlags) addFlags(cmd *cobra.Command) {
	f.src.addFlags(cmd)
	fs := cmd.Flags()
	f.shards.add(fs)
}

// defaultInventory is where gpumemd writes the nodes' inventory (gpumem.conf's
// InventoryPath default): report and quota read it unless --inventory or --nvml says
// otherwise.
const defaultInventory = "/etc/slurm/gpumem.d"

// equivalents is the TRES -> GiB table of the inventory the flags name (by default the
// cluster's, at defaultInventory).
func (f *policyFlags) equivalents(cmd *cobra.Command) (map[string]float64, error) {
	if f.src.inventory == "" && !cmd.Flags().Changed(nvmlsrc.FlagName) {
		f.src.inventory = defaultInventory
	}
	opt, err := f.options(cmd)
	if err != nil {
		return nil, err
	}
	c, err := f.src.load(cmd)
	if err != nil {
		return nil, err
	}
	list, err := accounting.Equivalents(c, opt)
	if err != nil {
		return nil, err
	}
	eq := map[string]float64{}
	for _, e := range list {
		eq[e.TRES] = e.GiB
	}
	return eq, nil
}

// options reads --shard-unit and --shard-types, whose defaults are gpumem.conf's.
func (f *policyFlags) options(cmd *cobra.Command) (accounting.Options, error) {
	unit, perGPU, err := f.shards.settings(cmd)
	return accounting.Options{ShardUnitMiB: unit, ShardTypes: perGPU}, err
}

func (f *policyFlags) run(cmd *cobra.Command) error {
	opt, err := f.options(cmd)
	if err != nil {
		return err
	}
	var quotas []accounting.Quota
	for _, s := range f.quotas {
		q, err := accounting.ParseQuota(s, units.WholeGiB)
		if err != nil {
			return err
		}
		quotas = append(quotas, q)
	}
	c, err := f.src.load(cmd)
	if err != nil {
		return err
	}
	eq, err := accounting.Equivalents(c, opt)
	if err != nil {
		return err
	}
	if len(eq) == 0 {
		return fmt.Errorf("the inventory has no GPUs: nothing to weigh")
	}
	w := cmd.OutOrStdout()
	switch f.print {
	case "tres":
		fmt.Fprintln(w, accounting.AccountingTRES(eq))
	case "weights":
		fmt.Fprintln(w, accounting.BillingWeights(eq))
	case "all":
		writePolicy(w, eq, quotas)
	default:
		return usageError(fmt.Errorf("--print %q: want all, tres or weights", f.print))
	}
	return nil
}

func writePolicy(w io.Writer, eq []accounting.Equiv, quotas []accounting.Quota) {
	fmt.Fprintln(w, "# GPU memory as Slurm's billing TRES: one billing unit = 1 GiB of GPU memory.")
	fmt.Fprintln(w, "# GiB equivalents from the inventory:")
	for _, e := range eq {
		fmt.Fprintf(w, "#   %-24s %6s GiB  (%s)\n", e.TRES, accounting.Num(e.GiB), e.Kind)
	}
	fmt.Fprintln(w, "\n# slurm.conf")
	fmt.Fprintln(w, "AccountingStorageType=accounting_storage/slurmdbd")
	fmt.Fprintln(w, "AccountingStorageTRES="+accounting.AccountingTRES(eq))
	fmt.Fprintln(w, "AccountingStorageEnforce=associations,limits,qos")
	fmt.Fprintln(w, "# append to every GPU partition's PartitionName= line:")
	fmt.Fprintf(w, "TRESBillingWeights=%q\n", accounting.BillingWeights(eq))
	if len(quotas) > 0 {
		fmt.Fprintln(w, "\n# GPU-memory quotas (limits on billing = GiB)")
		for _, q := range quotas {
			fmt.Fprintln(w, q.Command())
		}
	}
}
