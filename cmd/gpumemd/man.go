package main

import "github.com/gpumem/gpumem/internal/manpage"

// manSections are the EXIT STATUS, FILES and ENVIRONMENT of gpumemd's pages (section 8),
// as docs/gpumemd.md states them; each Slurm hook says its own exit status (its
// manpage.ExitStatus annotation), since Slurm reads it.
var manSections = manpage.Sections{
	ExitStatus: []manpage.Item{
		{Term: "0", Text: "gpumemd stopped after SIGTERM or SIGINT (--once: all was written)."},
		{Term: "1", Text: "gpumemd cannot start or run (the log says why), or a --once write failed; also a wrong value that only gpumem.conf gave."},
		{Term: "2", Text: "The command line is wrong: an unknown flag, a value a flag never takes."},
	},
	Files: []manpage.Item{
		{Term: "/etc/slurm/gpumem.conf", Text: "gpumem.conf (--config; $GPUMEM_CONF): the [gpumemd] section and the keys shared with the plugins."},
		{Term: "/etc/default/gpumemd", Text: "GPUMEMD_OPTS, the flags of gpumemd.service (rpm: /etc/sysconfig/gpumemd)."},
		{Term: "/etc/slurm/gres.conf", Text: "Written with --write-gres (--gres-conf), after slurmd -G accepts it."},
		{Term: "/etc/slurm/gpumem.d", Text: "This node's inventory, NODE.json (--inventory-dir), also served at GET /inventory."},
		{Term: "/var/lib/gpumem/history.db", Text: "The job history (--history-db) that gpumemctl jobs and advise read."},
		{Term: "/var/lib/gpumem/health.json", Text: "Held XIDs, the GPUs seen and gpumemd's drain, kept across restarts (--health-state)."},
		{Term: "/var/lib/gpumem/mig-journal.json", Text: "The journal of a MIG apply, so a restart finishes or rolls it back (--mig-journal)."},
		{Term: "/var/lib/gpumem/fence-failures.log", Text: "One line per driver fence the prolog could not set (--fence-failures)."},
	},
	Environment: []manpage.Item{
		manpage.ConfEnv,
		{Term: "SLURM_JOB_ID, SLURMD_NODENAME", Text: "The job and the node, for prolog, epilog and fence-check, as slurmd sets them."},
		{Term: "SLURM_SHARDS_ON_NODE, CUDA_VISIBLE_DEVICES", Text: "The job's shards and GPUs, for task-prolog, as slurmd sets them in the task's environment."},
	},
}

// The Slurm hooks' exit statuses: what Slurm does with each is why they differ from
// gpumemd's.
var hookExitStatus = map[string]string{
	"task-prolog": "0\tAlways: a failing TaskProlog would fail the job's task; stderr says why no limit was set.",
	"prolog": "0\tThe job is fenced, or there is nothing to fence.\n" +
		"1\tA fence this node promised could not be set: Slurm drains the node and requeues the job held, so it never runs unfenced here.",
	"epilog": "0\tAlways: a failing epilog would drain the node for a limit that goes with the job's cgroup anyway; what failed is logged and counted.",
	"fence-check": "0\tThe step may run: the prolog set the job's limit, or nothing on this node promised a driver fence.\n" +
		"1\tIt may not: the node fences by driver and the job's limit was not set, or cannot be checked; stderr says which.",
}
