package discover

import (
	"regexp"
	"strings"
)

// Type styles for GPU GRES types.
const (
	// TypeShort is the model token, e.g. "h100" for "NVIDIA H100 80GB HBM3": short to
	// type in --gres=gpu:h100:1 and a substring of Slurm's AutoDetect name, which is
	// how Slurm matches a configured Type against a detected one.
	TypeShort = "short"
	// TypeSlurm is exactly the name Slurm's gpu/nvml AutoDetect gives: the NVML name
	// lower-cased with spaces turned to underscores ("nvidia_h100_80gb_hbm3").
	TypeSlurm = "slurm"
)

// ValidTypeStyle reports whether s names a type style ("" is TypeShort).
func ValidTypeStyle(s string) bool { return s == "" || s == TypeShort || s == TypeSlurm }

var (
	nonToken = regexp.MustCompile(`[^a-z0-9.+]+`)
	memSize  = regexp.MustCompile(`^[0-9]+(gb|g)$`)
)

// GPUType names the Slurm GRES type of a GPU from its NVML product name.
func GPUType(name, style string) string {
	low := strings.ToLower(strings.TrimSpace(name))
	if style == TypeSlurm {
		return strings.ReplaceAll(low, " ", "_")
	}
	// The model is the first word holding a digit that is not a memory size:
	// "Tesla V100-SXM2-32GB" -> v100, "NVIDIA RTX A6000" -> a6000, "NVIDIA L40S" -> l40s.
	for _, tok := range nonToken.Split(strings.ReplaceAll(low, "-", " "), -1) {
		if strings.ContainsAny(tok, "0123456789") && !memSize.MatchString(tok) {
			return tok
		}
	}
	if s := strings.Trim(nonToken.ReplaceAllString(low, "_"), "_"); s != "" {
		return s
	}
	return "gpu"
}
