// Package bar draws GPU memory as the bars every gpumem text shows, '#' used and '.'
// free, so a reader compares GPUs by length at a glance.
package bar

import "strings"

// Width is the characters of a memory bar's inside.
const Width = 20

// Of draws used of total as a bar of Width characters, '#' used and '.' free,
// rounding the used part up so that any use shows:
//
//	[#####...............]
func Of(used, total int64) string { return Scaled(used, total, total) }

// Scaled draws used of total like Of, in a bar as long as total is against scale
// (the largest total of the bars drawn together): Width characters for scale, fewer
// for less, rounded up so that any memory shows. Bars of different GPUs then compare by
// length, and a bar holds no blank for a reader that splits the line at spaces:
//
//	[####################]  scale
//	[##########]            half of it, all used
//	[......]                a quarter and a bit, none used
func Scaled(used, total, scale int64) string {
	if total <= 0 || scale <= 0 {
		return "[" + strings.Repeat(" ", Width) + "]"
	}
	total = min(total, scale)
	width := (total*Width + scale - 1) / scale
	used = min(max(used, 0), total)
	n := (used*width + total - 1) / total
	return "[" + strings.Repeat("#", int(n)) + strings.Repeat(".", int(width-n)) + "]"
}
