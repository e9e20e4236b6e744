package slurmconf

import "strings"

// HasPrologFlag says whether slurm.conf's PrologFlags list flag (Contain, RunInJob,
// ...), as Slurm reads it: comma-separated, case-insensitive, blanks around a flag
// ignored.
func (c *Conf) HasPrologFlag(flag string) bool {
	for _, f := range strings.Split(c.Params["prologflags"], ",") {
		if strings.EqualFold(strings.TrimSpace(f), flag) {
			return true
		}
	}
	return false
}
