package main

import "strings"

// barWidth is the characters of a memory bar's inside.
const barWidth = 20

// bar draws used of total as a bar of barWidth characters, '#' used and '.' free,
// rounding the used part up so that any use shows:
//
//	[#####...............]
func bar(used, total int64) string {
	if total <= 0 {
		return "[" + strings.Repeat(" ", barWidth) + "]"
	}
	used = min(max(used, 0), total)
	n := int((used*barWidth + total - 1) / total)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", barWidth-n) + "]"
}
