// Package clip shortens text a user controls (a host list, a job's fields) before a
// message quotes it, so that a refusal or a log line costs what its words do, not what
// the user typed.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// Sizes for the common quotes: List for one user value inside a sentence (a refusal may
// quote two and still stay under Line), Line for a whole message or log line.
const (
	List = 1 << 10
	Line = 4 << 10
)

// String is s when it is at most max bytes; else its head, cut on a character boundary,
// then an ellipsis and how many bytes were left out, all within max bytes (a max too
// small for the note gets the head alone).
func String(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	// The note's length depends on the count it names, which depends on the head: the
	// head is sized for the widest count, len(s).
	note := func(left int) string { return "… (" + strconv.Itoa(left) + " more bytes)" }
	head := max - len(note(len(s)))
	if head <= 0 {
		return cut(s, max)
	}
	h := cut(s, head)
	return h + note(len(s)-len(h))
}

// cut is the longest head of s of at most n bytes that ends on a character boundary.
func cut(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
