package slurmgres

import "strings"

// IsCountDrain says whether reason is the drain reason slurmctld sets itself when a node
// registers fewer GRES than slurm.conf gives it (src/interfaces/gres.c, 22.05 to 26.05:
// "gres/gpu count reported lower than configured (1 < 4)", "gres/gpu:3g.20gb count too
// low (0 < 2)"). No admin writes these words.
func IsCountDrain(reason string) bool {
	return strings.HasPrefix(reason, Slash) &&
		(strings.Contains(reason, " count reported lower than configured (") || strings.Contains(reason, " count too low ("))
}
