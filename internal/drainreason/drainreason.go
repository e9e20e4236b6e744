// Package drainreason is the one home of the drain reasons gpumem writes into Slurm, and
// of the tests that tell them apart. Each writer (the health monitor, the driver fence's
// prolog, a MIG layout change) may lift only its own drain, so each kind must be told
// from the others and from an admin's by its reason alone: that is all Slurm keeps.
//
//	gpumem: health: PROBLEM; PROBLEM...     ForHealth: the health monitor
//	gpumem: fence: job N: WHY               ForFence: a failed driver fence for job N
//	gpumem: MIG layout change[...]          MIG: a MIG layout change (internal/migapply)
//
// Reasons are bounded to MaxLen bytes, short enough for sinfo -R.
//
// Older releases wrote the health monitor's reason as "gpumem: PROBLEM; ..." and a failed
// fence as "gpumem: GPU memory fence failed for job N". Both are still recognised, so a
// node drained before an upgrade keeps its owner: the old fence form is a fence reason
// (never resumed by the health monitor, which the old release wrongly did), and the old
// health form is health's, recognised only by the problems the old monitor could name
// ("NVML failed: ...", "GPU ..."), not by the bare prefix, so that a kind of drain added
// later is never taken for the monitor's and resumed by it.
package drainreason

import (
	"strings"
	"unicode/utf8"
)

const (
	// Prefix starts every drain reason gpumem writes.
	Prefix = "gpumem: "
	// MIG is the reason a MIG layout change drains with while it repartitions, and
	// MIGFailed the one it leaves when it fails past the point of no return.
	MIG       = Prefix + "MIG layout change"
	MIGFailed = MIG + ": failed, see gpumemd log"
	// MaxLen bounds every reason built here, in bytes.
	MaxLen = 200

	health    = Prefix + "health: "
	fenceKind = Prefix + "fence: "
	fence     = fenceKind + "job "
	// oldFence is the fence reason of releases before this package.
	oldFence = Prefix + "GPU memory fence failed for job "
)

// ForHealth is the health monitor's drain reason for its problems.
func ForHealth(problems []string) string {
	return bound(health + strings.Join(problems, "; "))
}

// IsHealth says whether reason is the health monitor's (of this release or an older one).
func IsHealth(reason string) bool {
	if strings.HasPrefix(reason, health) {
		return true
	}
	// An older release's "gpumem: PROBLEM; ...": its problems all started so.
	rest, ok := strings.CutPrefix(reason, Prefix)
	return ok && !IsFence(reason) && (strings.HasPrefix(rest, "NVML failed: ") || strings.HasPrefix(rest, "GPU "))
}

// ForFence is the drain reason for a driver fence that failed for job jobID, why saying
// what failed. The job id comes before why, so bounding it never cuts the id.
func ForFence(jobID, why string) string {
	r := fence + jobID
	if why != "" {
		r += ": " + why
	}
	return bound(r)
}

// IsFence says whether reason is a failed fence's (of this release or an older one).
func IsFence(reason string) bool {
	return strings.HasPrefix(reason, fenceKind) || strings.HasPrefix(reason, oldFence)
}

// FenceJob is the job whose failed fence drained with reason; "" when reason is not a
// fence's.
func FenceJob(reason string) string {
	rest, ok := strings.CutPrefix(reason, fence)
	if !ok {
		rest, ok = strings.CutPrefix(reason, oldFence)
	}
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, ":")
	if id = strings.TrimSpace(id); strings.ContainsAny(id, " \t") {
		return ""
	}
	return id
}

// IsMIG says whether reason is a MIG layout change's, failed or not.
func IsMIG(reason string) bool {
	return strings.HasPrefix(reason, MIG)
}

// IsGpumem says whether reason is any of gpumem's drains, of a kind known here or not.
func IsGpumem(reason string) bool {
	return strings.HasPrefix(reason, Prefix)
}

// bound cuts r to MaxLen bytes, at a character boundary, marking the cut with "...".
func bound(r string) string {
	if len(r) <= MaxLen {
		return r
	}
	n := MaxLen - len("...")
	for n > 0 && !utf8.RuneStart(r[n]) {
		n--
	}
	return r[:n] + "..."
}
