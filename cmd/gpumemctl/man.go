package main

import (
	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/manpage"
)

func init() { subcommands = append(subcommands, newManCmd) }

// newManCmd writes gpumemctl's manual pages (section 1) from the same help text the
// commands print.
func newManCmd() *cobra.Command { return manpage.Command("1", manSections) }

// manSections are the EXIT STATUS, FILES and ENVIRONMENT of every gpumemctl page, as
// docs/cli.md states them; the commands whose status means more say so themselves
// (manpage.ExitStatus annotations).
var manSections = manpage.Sections{
	ExitStatus: []manpage.Item{
		{Term: "0", Text: "Done."},
		{Term: "1", Text: "The command failed; the error says why and what to do."},
		{Term: "2", Text: "The command line is wrong: an unknown command or flag, a value a flag never takes, a wrong number of arguments."},
	},
	Files: []manpage.Item{
		{Term: "/etc/slurm/gpumem.conf", Text: "gpumem.conf (--config; $GPUMEM_CONF): the shard unit, shard types and other settings the commands share with the plugins and gpumemd."},
		{Term: "/etc/slurm/gpumem.d", Text: "The inventory (--inventory): one NODE.json per GPU node, as gpumemd writes it."},
		{Term: "/etc/slurm/gres.conf", Text: "The installed gres.conf: what gres diff compares with (--current) and gres check validates by default (beside slurm.conf)."},
		{Term: "/var/lib/gpumem/refusals.json", Text: "job_submit's refusal counts, which exporter serves (gpumem.conf RefusalCounts)."},
		{Term: "/etc/default/gpumemctl-steer", Text: "The flags of the gpumemctl-steer service (rpm: /etc/sysconfig/gpumemctl-steer)."},
		{Term: "/etc/default/gpumemctl-pull", Text: "The settings of the gpumemctl-pull service (rpm: /etc/sysconfig/gpumemctl-pull)."},
		{Term: "/etc/default/gpumemctl-exporter", Text: "The flags of the gpumemctl-exporter service (rpm: /etc/sysconfig/gpumemctl-exporter)."},
	},
	Environment: []manpage.Item{
		manpage.ConfEnv,
		{Term: "GPUMEM_TRACE_DIR", Text: "The folder of the cluster trace simulate replays (default: the shared data folder beside the repository)."},
		{Term: "SLURM_CONF", Text: "Read, as Slurm's other variables, by the Slurm commands gpumemctl runs (scontrol, squeue, sacct)."},
	},
}

// Exit statuses of commands whose 1 means more than a failure (docs/cli.md).
const (
	diffExitStatus = "0\tThe files are the same.\n" +
		"1\tThey differ; the diff is printed.\n" +
		"2\tThe comparison could not be made."
	checkExitStatus = "0\tslurmd accepts the file for every node.\n" +
		"1\tslurmd refuses it.\n" +
		"2\tThe check could not be made."
	migStatusExitStatus = "0\tEvery GPU of the desired layouts has its layout.\n" +
		"1\tA GPU's layout differs, or it is not in the inventory; the table's last line (stderr for -o json and -o csv) says how many.\n" +
		"2\tThe command line is wrong."
	nodesExitStatus = "0\tDone: every node answered.\n" +
		"1\tThe command failed, or a node did not answer: what the nodes that answered hold is printed, and stderr names each node that did not.\n" +
		"2\tThe command line is wrong: an unknown flag, a value a flag never takes, a wrong number of arguments."
)

// manExitStatus is the Annotations of a command whose exit status is its own.
func manExitStatus(s string) map[string]string { return map[string]string{manpage.ExitStatus: s} }
