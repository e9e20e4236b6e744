package jobsummary

import (
	"fmt"
	"strings"
)

// An AdminComment is free text that admins and other tools (jobstats keeps its whole
// summary there) write too. gpumem's part is one token per node, each after a space or
// at the start; everything else is kept byte for byte. A job on several nodes gets one
// token from each node's gpumemd, and each replaces only its own.

// tokens are the spans of c that start with the token prefix at the start of c or
// after a space, to the next space.
func tokens(c string) (spans [][2]int) {
	for i := 0; i < len(c); {
		j := strings.Index(c[i:], prefix)
		if j < 0 {
			break
		}
		start := i + j
		end := strings.IndexByte(c[start:], ' ')
		if end < 0 {
			end = len(c)
		} else {
			end += start
		}
		if start == 0 || c[start-1] == ' ' {
			spans = append(spans, [2]int{start, end})
		}
		i = end
	}
	return spans
}

// Merge returns comment with tok as its node's gpumem token: an earlier token of the
// same node is replaced, any other text is kept as it was, and tok is appended after a
// space. A comment longer than MaxComment is refused: it is not gpumem's to cut.
func Merge(comment, tok string) (string, error) {
	s, err := Parse(tok)
	if err != nil {
		return "", err
	}
	if len(comment) > MaxComment {
		return "", fmt.Errorf("the job's AdminComment is %d bytes, more than %d: left as it is", len(comment), MaxComment)
	}
	var b strings.Builder
	last := 0
	for _, sp := range tokens(comment) {
		old, err := Parse(comment[sp[0]:sp[1]])
		if err != nil || old.Node != s.Node {
			continue
		}
		cut := sp[0]
		if cut > 0 {
			cut-- // with the space before it
		} else if sp[1] < len(comment) {
			sp[1]++ // at the start: with the space after it
		}
		b.WriteString(comment[last:cut])
		last = sp[1]
	}
	b.WriteString(comment[last:])
	kept := b.String()
	if kept == "" {
		return tok, nil
	}
	return kept + " " + tok, nil
}

// ParseComment reads every gpumem token of an AdminComment, one summary per node (a
// node's later token wins). Text that is not gpumem's is ignored; a token that starts
// like gpumem's and cannot be read (a newer release's, a damaged one) is returned in
// errs, so the reader can say why a summary is missing.
func ParseComment(comment string) (sums []Summary, errs []error) {
	if len(comment) > MaxComment {
		comment = comment[:MaxComment]
	}
	at := map[string]int{}
	for _, sp := range tokens(comment) {
		tok := comment[sp[0]:sp[1]]
		s, err := Parse(tok)
		if err != nil {
			// Only what names a version is gpumem's: "gpumem/docs" in an admin's note
			// is theirs.
			if len(tok) > len(prefix) && tok[len(prefix)] >= '0' && tok[len(prefix)] <= '9' {
				errs = append(errs, err)
			}
			continue
		}
		if i, ok := at[s.Node]; ok {
			sums[i] = s
			continue
		}
		at[s.Node] = len(sums)
		sums = append(sums, s)
	}
	return sums, errs
}
