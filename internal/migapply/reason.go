package migapply

// The drain reasons an apply reads: its own, another of gpumem's writers', and the one
// slurmctld sets over its own for a node's GRES count. Every reason is spelled in
// drainreason and slurmgres; this file only decides what each means to an apply.

import (
	"github.com/gpumem/gpumem/internal/drainreason"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// drainer names the writer of another of gpumem's drains, for the apply's refusal.
func drainer(reason string) string {
	switch {
	case drainreason.IsHealth(reason):
		return "gpumemd's health monitor"
	case drainreason.IsFence(reason):
		return "gpumemd for a failed driver fence (job " + drainreason.FenceJob(reason) + ")"
	}
	return "gpumem"
}

// ownDrain says whether the node is drained by an apply, with one of the reasons an apply
// sets (drainreason.MIG while it repartitions, MIGFailed when it failed past the point of
// no return). A node drained with any other reason is an admin's (or another of
// gpumem's writers'): never resumed, never drained over here.
func ownDrain(n slurmcli.Node) bool {
	return n.Flag("DRAIN") && (n.Reason == drainreason.MIG || n.Reason == drainreason.MIGFailed)
}

// slurmGresDrain says whether n is drained by slurmctld itself for registering fewer
// GRES than slurm.conf gives it (slurmgres.IsCountDrain). During an apply that is the
// apply's own doing: a node whose slurmd came back (a reboot) on the new gres.conf
// before gpumemd finished the apply from its journal registers the new instances
// against the old Gres= line. No admin sets these words; Slurm replaced gpumem's own
// reason with them.
func slurmGresDrain(n slurmcli.Node) bool {
	return n.Flag("DRAIN") && slurmgres.IsCountDrain(n.Reason)
}
