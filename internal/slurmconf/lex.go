package slurmconf

import (
	"fmt"
	"strings"
)

type logicalLine struct {
	no   int // first physical line, 1-based
	text string
}

// logicalLines drops comments and joins lines continued with a trailing backslash.
func logicalLines(text string) []logicalLine {
	var out []logicalLine
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(text, "\n") {
		if cur.Len() == 0 {
			start = i + 1
		}
		line := stripComment(strings.TrimRight(raw, "\r"))
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(line)
		out = append(out, logicalLine{start, cur.String()})
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, logicalLine{start, cur.String()})
	}
	return out
}

// stripComment cuts at '#' outside double quotes; "\#" is a literal '#'.
func stripComment(s string) string {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case '\\':
			if i+1 < len(s) && s[i+1] == '#' {
				i++
			}
		case '#':
			if !quoted {
				return s[:i]
			}
		}
	}
	return s
}

// tokens splits on blanks outside double quotes and drops the quotes.
func tokens(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted, any = !quoted, true
		case c == '\\' && i+1 < len(s) && s[i+1] == '#':
			cur.WriteByte('#')
			i++
		case (c == ' ' || c == '\t') && !quoted:
			if any {
				out = append(out, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteByte(c)
			any = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote")
	}
	if any {
		out = append(out, cur.String())
	}
	return out, nil
}

type kvPair struct{ key, val string }

// pairs reads Key=Value words, keys lower-cased as Slurm ignores their case.
func pairs(fields []string) ([]kvPair, error) {
	out := make([]kvPair, 0, len(fields))
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not Key=Value", f)
		}
		out = append(out, kvPair{strings.ToLower(k), v})
	}
	return out, nil
}
