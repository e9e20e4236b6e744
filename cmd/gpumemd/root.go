package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/manpage"
	"github.com/gpumem/gpumem/internal/version"
)

// newRoot is gpumemd's command line in gpumemctl's conventions (cobra): the daemon,
// task-prolog, and the hidden man. The daemon parses its own flags (parseArgs: twice,
// over gpumem.conf's values), so cobra's flag set only describes them, for --help and
// the manual page.
func newRoot(ctx context.Context, log *slog.Logger) *cobra.Command {
	root := &cobra.Command{
		Use:     "gpumemd",
		Version: version.String(),
		Short:   "The gpumem node sidecar: GPU inventory, gres.conf, metrics, per-job GPU memory, health",
		Long: `gpumemd runs on every GPU node, as root, beside slurmd. Every poll it reads NVML once and
hands that snapshot to: usage (which Slurm job owns each GPU process, and the policy for
jobs over their slice), health (drain and resume through scontrol), gres.conf and the
inventory the plugins read (validated with slurmd -G, installed atomically), the per-job
history, and /metrics and /api on --listen.

Settings: flags, over gpumem.conf's [gpumemd] and [mig] sections (--config), over the
defaults shown here. Sizes take their unit (5G, 512M), as in the request language.
With --once it writes gres.conf and/or the inventory once and exits.

Exit status: 0 after SIGTERM or SIGINT (--once: all was written), 1 when gpumemd cannot
start or a --once write failed, 2 for a wrong command line. See docs/gpumemd.md.`,
		Example: `  gpumemd --config /etc/slurm/gpumem.conf
  gpumemd --once --write-gres --write-inventory --nvml=real
  gpumemd --listen :9402 --web.config.file /etc/gpumem/web-config.yml`,
		// parseArgs reads the flags itself; it reports any argument left over.
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		SilenceUsage:       true,
		SilenceErrors:      true,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := run(ctx, args, log, nil)
			if errors.Is(err, pflag.ErrHelp) {
				return cmd.Help()
			}
			return err
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	var described options
	described.Gpumemd, described.MIG = config.DefaultGpumemd(), config.DefaultMIG()
	addFlags(root.Flags(), &described)
	root.AddCommand(newTaskPrologCmd(), newFenceCmd("prolog"), newFenceCmd("epilog"), newFenceCmd("fence-check"), manpage.Command("8", manSections))
	return root
}

// newTaskPrologCmd is `gpumemd task-prolog`. It parses its one flag itself and never
// fails (taskProlog), since a failing TaskProlog fails the job's task.
func newTaskPrologCmd() *cobra.Command {
	return &cobra.Command{
		Use:         "task-prolog [--config gpumem.conf]",
		Annotations: map[string]string{manpage.ExitStatus: hookExitStatus["task-prolog"]},
		Short:       "Slurm TaskProlog for GPUs under CUDA MPS: the job's shards as its MPS memory limit",
		Long: `Prints "export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=NM,..." for a shard job: its shards
(SLURM_SHARDS_ON_NODE) times gpumem.conf's ShardUnit, split over the GPUs it sees
(CUDA_VISIBLE_DEVICES), which slurmd sets in the task's environment. Jobs without
shards get nothing. slurm.conf: TaskProlog=/usr/sbin/gpumemd-task-prolog. Always exits
0, saying on stderr why no limit was set.`,
		DisableFlagParsing: true,
		Run: func(cmd *cobra.Command, args []string) {
			taskProlog(args, os.Getenv, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}

// fenceWhere says where Slurm runs each fence hook, for its help.
var fenceWhere = map[string]string{
	"prolog": "Run by slurmstepd as root inside the job's extern step (the Prolog with RunInJob, or\n" +
		"spank_gpumem.so on 22.05); the allocation comes from scontrol -d show job.",
	"epilog":      "Run by Slurm as root after the job's steps, before its cgroup goes.",
	"fence-check": "Run by spank_gpumem.so as root in each step's slurmstepd, before its tasks.",
}

// newFenceCmd is `gpumemd prolog` or `gpumemd epilog`, the driver fence's hooks
// (fenceProlog, fenceEpilog). They parse their one flag themselves.
func newFenceCmd(name string) *cobra.Command {
	short := map[string]string{
		"prolog":      "Slurm Prolog (PrologFlags=Contain,RunInJob): set each shard job's GPU memory limit on its cgroup",
		"epilog":      "Slurm Epilog (PrologFlags=Contain,RunInJob): clear the job's GPU memory limits",
		"fence-check": "Run by spank_gpumem.so before each step: refuse the step when the job's GPU memory limit was not set",
	}[name]
	return &cobra.Command{
		Use:         name + " [--config gpumem.conf]",
		Annotations: map[string]string{manpage.ExitStatus: hookExitStatus[name]},
		Short:       short,
		Long: short + `.
` + fenceWhere[name] + `
The job and the node come from Slurm's environment (SLURM_JOB_ID, SLURMD_NODENAME),
never the job's; the fence each GPU holds from this node's inventory. See docs/gpumemd.md, "The driver fence".`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			env := realFenceEnv()
			rc := 0
			switch name {
			case "prolog":
				rc = fenceProlog(args, env, cmd.ErrOrStderr())
			case "fence-check":
				rc = fenceCheck(args, env, cmd.ErrOrStderr())
			default:
				rc = fenceEpilog(args, env, cmd.ErrOrStderr())
			}
			if rc != 0 {
				os.Exit(rc)
			}
			return nil
		},
	}
}

// exitCode is the status gpumemd exits with after err.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// checkNoArgs refuses positional arguments: gpumemd takes flags only.
func checkNoArgs(fs *pflag.FlagSet) error {
	if fs.NArg() == 0 {
		return nil
	}
	return usageError{fmt.Errorf("unexpected argument %q: gpumemd takes flags, and the commands task-prolog, prolog, epilog and fence-check", fs.Arg(0))}
}
