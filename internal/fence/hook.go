package fence

import (
	"errors"
	"io/fs"
	"strings"
)

// SpankPlugin is the file name of gpumem's SPANK plugin (cgo/spank).
const SpankPlugin = "spank_gpumem.so"

// Hooks is what Slurm's configuration says about the ways gpumemd's hook may run:
// slurm.conf's Prolog and PrologFlags, and the SPANK configuration.
type Hooks struct {
	Prolog            string // slurm.conf's Prolog
	Contain, RunInJob bool   // slurm.conf's PrologFlags
	PlugStack         string // the SPANK configuration Slurm reads
	// Spank says whether PlugStack requires SpankPlugin; asked only when the Prolog
	// alone does not do.
	Spank func() (bool, error)
}

// HookProblem is "" when Slurm runs gpumemd's hook as root after the job's cgroup
// exists and before the job's first step, else why not. Two ways do (docs/gpumemd.md):
// the Prolog with PrologFlags=RunInJob (24.05 and later), or gpumem's SPANK plugin,
// required in plugstack.conf, in the extern step that PrologFlags=Contain starts (any
// release; the only way on 22.05, whose Prolog runs in slurmd before the cgroup exists).
func HookProblem(h Hooks) string {
	if (strings.Contains(h.Prolog, "gpumemd") || strings.Contains(h.Prolog, "gpumem-prolog")) && h.RunInJob {
		return ""
	}
	spank, err := h.Spank()
	switch {
	case spank && (h.Contain || h.RunInJob):
		return ""
	case spank:
		return "plugstack.conf requires " + SpankPlugin + " but slurm.conf's PrologFlags lack Contain: no extern step runs it before the job"
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "neither slurm.conf's Prolog with PrologFlags=RunInJob nor a readable plugstack.conf: " + err.Error()
	}
	return "neither gpumemd's prolog with PrologFlags=Contain,RunInJob (Slurm 24.05 or later) nor " + SpankPlugin + " required in " + h.PlugStack + " with PrologFlags=Contain: nothing sets the limit after the job's cgroup exists"
}
