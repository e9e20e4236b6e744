package gresconf

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a hunk shows around a change, as diff -u.
const diffContext = 3

// Diff is the unified diff (diff -u's format, which patch reads) that turns a into b,
// or "" when they are equal. gres.conf files are small, so a plain longest-common-
// subsequence table is enough.
func Diff(a, b []byte, nameA, nameB string) string {
	if string(a) == string(b) {
		return ""
	}
	x, y := lines(a), lines(b)
	ops := editScript(x, y)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	for start := 0; start < len(ops); {
		// A hunk runs from diffContext lines before a change to diffContext after the
		// last change that is at most 2*diffContext unchanged lines from the one before.
		first := start
		for first < len(ops) && ops[first].kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		from := max(start, first-diffContext)
		end := first
		for i := first; i < len(ops); i++ {
			if ops[i].kind != ' ' {
				end = i + 1
			} else if i-end >= 2*diffContext {
				break
			}
		}
		to := min(len(ops), end+diffContext)
		writeHunk(&out, ops[from:to], x, y)
		start = to
	}
	return out.String()
}

// edit is one line of the script: ' ' kept, '-' removed from a, '+' added from b; ai
// and bi are the line's index in a and b (the next one, for the side it is not on).
type edit struct {
	kind   byte
	ai, bi int
}

func editScript(x, y []string) []edit {
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []edit
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, edit{' ', i, j})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, edit{'-', i, j})
			i++
		default:
			ops = append(ops, edit{'+', i, j})
			j++
		}
	}
	return ops
}

// writeHunk writes one "@@ -l,n +l,n @@" hunk. A last line without its newline is
// followed by diff's "\ No newline at end of file", so patch restores it exactly.
func writeHunk(out *strings.Builder, ops []edit, x, y []string) {
	var na, nb int
	for _, o := range ops {
		if o.kind != '+' {
			na++
		}
		if o.kind != '-' {
			nb++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(ops[0].ai, na), hunkRange(ops[0].bi, nb))
	for _, o := range ops {
		line := x[o.ai:]
		if o.kind == '+' {
			line = y[o.bi:]
		}
		out.WriteByte(o.kind)
		out.WriteString(line[0])
		if !strings.HasSuffix(line[0], "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange is diff -u's "start,count": lines from 1, and for an empty range the line
// before it.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// lines are b's lines with their newlines, so that a last line without one differs
// from the same text with it.
func lines(b []byte) []string {
	ls := strings.SplitAfter(string(b), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}
