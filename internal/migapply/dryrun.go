package migapply

// What an apply would do, as --dry-run prints it.

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/internal/drainreason"
)

// Steps describes what Apply would do, for --dry-run.
func (a *Applier) Steps(changes []GPUChange) []string {
	if len(changes) == 0 {
		return []string{"nothing to do: every GPU already has its desired layout"}
	}
	var gpus []string
	for _, c := range changes {
		gpus = append(gpus, fmt.Sprintf("GPU %d", c.Index))
	}
	list := strings.Join(gpus, ", ")
	steps := []string{fmt.Sprintf("check %s: MIG mode on, no process, layouts NVML accepts (stop here if any fails)", list)}
	if a.Slurm != nil {
		steps = append(steps, fmt.Sprintf("drain %s with reason %q (an existing drain is kept and not resumed)", a.Node, drainreason.MIG),
			fmt.Sprintf("wait until %s runs no job, at most %s; then give up and resume", a.Node, a.idleTimeout()))
	}
	for _, c := range changes {
		steps = append(steps, fmt.Sprintf("GPU %d: destroy %s, create %s", c.Index, orNone(c.From), orNone(c.To)))
	}
	steps = append(steps, "verify every layout through NVML", "regenerate gres.conf", "make slurmd and slurmctld read it")
	if a.Slurm != nil && a.NodeGres != nil {
		steps = append(steps, fmt.Sprintf("wait until slurmctld reports %s's new Gres=, at most %s", a.Node, a.reloadTimeout()))
	}
	if a.Slurm != nil {
		steps = append(steps, "resume "+a.Node+" (only if this apply drained it)")
	}
	return steps
}

func orNone(l string) string {
	if l == "" {
		return "(no instances)"
	}
	return l
}
