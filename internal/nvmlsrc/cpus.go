package nvmlsrc

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// ParseCPUList parses a Linux/Slurm CPU list such as "0-15,32-47" into sorted ids.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	last := -1
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or range like 0-15", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: %q is not a range like 0-15", s, part)
			}
		}
		if a <= last {
			return nil, fmt.Errorf("CPU list %q: ranges must be ascending and not overlap", s)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
		last = b
	}
	return out, nil
}

// FormatCPUList renders sorted CPU ids as a compact list ("0-15,32-47").
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if i == j {
			fmt.Fprintf(&b, "%d", cpus[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		}
		i = j + 1
	}
	return b.String()
}

const maskBits = 64 // NVML fills 64-bit words on the platforms gpumem supports

// cpuMask renders CPU ids as NVML's affinity bitmask of words 64-bit words.
func cpuMask(cpus []int, words int) []uint {
	m := make([]uint, words)
	for _, c := range cpus {
		if c/maskBits < words {
			m[c/maskBits] |= 1 << (c % maskBits)
		}
	}
	return m
}

// MaskCPUs is the inverse of an NVML affinity bitmask.
func MaskCPUs(mask []uint) []int {
	var out []int
	for w, word := range mask {
		// NVML's masks are wide and mostly zero: visit set bits only.
		for word != 0 {
			b := bits.TrailingZeros(word)
			out = append(out, w*maskBits+b)
			word &^= 1 << b
		}
	}
	return out
}
