package main

import "strings"

// barWidth is the characters of a memory bar's inside.
const barWidth = 20

// bar draws used of total as a bar of barWidth characters, '#' used and '.' free,
// rounding the used part up so that any use shows:
//
//	[#####...............]
func bar(used, total int64) string { return scaledBar(used, total, total) }

// scaledBar draws used of total like bar, in a bar as long as total is against scale
// (the largest total of the bars drawn together): barWidth characters for scale, fewer
// for less, rounded up so that any memory shows. Bars of different GPUs then compare by
// length, and a bar holds no blank for a reader that splits the line at spaces:
//
//	[####################]  scale
//	[##########]            half of it, all used
//	[......]                a quarter and a bit, none used
func scaledBar(used, total, scale int64) string {
	if total <= 0 || scale <= 0 {
		return "[" + strings.Repeat(" ", barWidth) + "]"
	}
	total = min(total, scale)
	width := (total*barWidth + scale - 1) / scale
	used = min(max(used, 0), total)
	n := (used*width + total - 1) / total
	return "[" + strings.Repeat("#", int(n)) + strings.Repeat(".", int(width-n)) + "]"
}
