package slurmconf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/clip"
)

// MaxHosts bounds an expansion of slurm.conf so that a typo like n[1-1000000000] is an
// error, not an out-of-memory inside slurmctld.
const MaxHosts = 1 << 20

// ExpandHostlist expands a Slurm host list such as "n[1-3,5],gpu[01-02]" or
// "r[1-2]n[1-2]" into names, in order, at most MaxHosts of them. Zero padding of a
// range is kept (gpu01, gpu02).
func ExpandHostlist(s string) ([]string, error) { return ExpandHostlistMax(s, MaxHosts) }

// ExpandHostlistMax is ExpandHostlist with its own bound: a list that names more than
// max hosts is an error before more than max names are made, so a reader of Slurm's
// output sizes it to the cluster rather than to what a string can express.
func ExpandHostlistMax(s string, max int) ([]string, error) {
	var out []string
	for _, item := range splitTop(s) {
		if item == "" {
			continue
		}
		names, err := expandOne(item, max-len(out))
		if errors.Is(err, errTooMany) {
			return nil, fmt.Errorf("host list %q: more than %d hosts", clip80(s), max)
		}
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", clip80(s), err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// clip80 is s short enough for an error about a list from slurm.conf.
func clip80(s string) string { return clip.String(s, 80) }

// splitTop splits on commas outside brackets (a hostlist's ranges) and parentheses (a
// GRES entry's socket list).
func splitTop(s string) []string {
	var parts []string
	eachTop(s, func(p string) bool { parts = append(parts, p); return true })
	return parts
}

// eachTop calls f with each part splitTop makes, trimmed, until f returns false.
func eachTop(s string, f func(string) bool) {
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case ',':
			if depth == 0 {
				if !f(strings.TrimSpace(s[start:i])) {
					return
				}
				start = i + 1
			}
		}
	}
	f(strings.TrimSpace(s[start:]))
}

// expandOne expands one item of a list into at most max names.
func expandOne(item string, max int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("%q: ']' without '['", clip80(item))
		}
		if max < 1 {
			return nil, errTooMany
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", clip80(item))
	}
	end += open
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	tails, err := expandOne(rest, max)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		nums, err := expandRange(strings.TrimSpace(r), max)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", clip80(item), err)
		}
		if len(out)+len(nums)*len(tails) > max {
			return nil, errTooMany
		}
		for _, n := range nums {
			for _, t := range tails {
				out = append(out, prefix+n+t)
			}
		}
	}
	return out, nil
}

// expandRange expands "1-3" or "07" into numbers, padded to the width of the low end.
// Past max numbers it stops with an error.
func expandRange(r string, max int) ([]string, error) {
	lo, hi, isRange := strings.Cut(r, "-")
	a, err := strconv.Atoi(lo)
	if err != nil || a < 0 {
		return nil, fmt.Errorf("%q is not a number or a range like 1-4", r)
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(hi); err != nil || b < a {
			return nil, fmt.Errorf("%q is not a range like 1-4", r)
		}
	}
	if b-a >= max {
		return nil, errTooMany
	}
	width := 0
	if len(lo) > 1 && lo[0] == '0' {
		width = len(lo)
	}
	out := make([]string, 0, b-a+1)
	for n := a; n <= b; n++ {
		out = append(out, fmt.Sprintf("%0*d", width, n))
	}
	return out, nil
}

// errTooMany stops an expansion at its bound; ExpandHostlistMax names the bound.
var errTooMany = errors.New("too many hosts")
