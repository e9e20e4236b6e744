package shim

import "strings"

// maxGoProcs is how many threads may run Go code at once inside slurmctld: a decision
// takes microseconds, and Go's default (one per CPU, 64 or more on a controller) would
// only add busy Go threads beside the controller's own.
const maxGoProcs = 2

// GoProcs is the GOMAXPROCS job_submit sets in slurmctld, given the GOMAXPROCS in its
// environment and the CPUs it may use: 0 (leave the runtime as it is) when the
// administrator set GOMAXPROCS, else at most maxGoProcs.
func GoProcs(env string, cpus int) int {
	if strings.TrimSpace(env) != "" {
		return 0
	}
	return max(1, min(cpus, maxGoProcs))
}
