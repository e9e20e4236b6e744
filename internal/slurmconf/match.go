package slurmconf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A job's host lists (--nodelist, --exclude, a --nodefile as the client read it, a
// reservation's nodes) are the user's: x[0-1000000000] is a few bytes that name a
// billion hosts. They are never expanded. A Hostlist is such a list checked, and a
// NodeSet, the cluster's node names, says what it names there: a range is walked in
// its order only while it names nodes the cluster has, or, where it names more than
// the cluster has, the cluster's names are tested against it. Either way the cost is
// the cluster's size, the list's text and its number of ranges, never what it names.

// Bounds on a host list read without expanding it. The text is read in one pass; each
// range costs at most one look at every node of the cluster.
const (
	MaxListBytes = 1 << 20 // of text
	MaxRanges    = 4096    // ranges ("1-4", "07") in brackets, all items together
	maxSets      = 8       // bracketed sets in one item: r[1-2]n[1-4] has two
)

// Hostlist is a host list checked but not expanded.
type Hostlist struct {
	s    string
	size uint64 // names, counted with repeats; saturates at maxSize
}

// maxSize is where a Hostlist's count of names stops.
const maxSize = math.MaxInt64

// ParseHostlist checks s, a host list in the syntax ExpandHostlist reads, within
// MaxListBytes and MaxRanges, without expanding it.
func ParseHostlist(s string) (Hostlist, error) {
	if len(s) > MaxListBytes {
		return Hostlist{}, fmt.Errorf("host list %q: %d bytes, more than %d", clip80(s), len(s), MaxListBytes)
	}
	h := Hostlist{s: s}
	var it item
	ranges := 0
	var err error
	eachTop(s, func(t string) bool {
		if t == "" {
			return true
		}
		if err = it.parse(t, &ranges); err != nil {
			return false
		}
		h.size = addSat(h.size, it.size())
		return true
	})
	if err != nil {
		return Hostlist{}, fmt.Errorf("host list %q: %w", clip80(s), err)
	}
	return h, nil
}

// Size is how many names h names, counted with repeats, up to math.MaxInt64.
func (h Hostlist) Size() uint64 { return h.size }

// items calls f with each item of h, parsed into one reused item.
func (h Hostlist) items(f func(*item) bool) {
	var it item
	ranges := 0
	eachTop(h.s, func(t string) bool {
		if t == "" {
			return true
		}
		if it.parse(t, &ranges) != nil {
			return false // checked by ParseHostlist: not reached
		}
		return f(&it)
	})
}

// Each calls f with every name of h, in order, until f returns false: the expansion,
// one name at a time. The bytes are reused: f copies what it keeps. A caller that
// does not stop costs what the list names; NodeSet's methods stop at the cluster.
func (h Hostlist) Each(f func(name []byte) bool) {
	buf := make([]byte, 0, 64)
	h.items(func(it *item) bool { return it.each(buf, 0, f) })
}

// item is one comma-separated item: lits[0] set 0 lits[1] set 1 ... lits[k], where set
// j is spans[ends[j-1]:ends[j]]. The strings are slices of the list.
type item struct {
	lits  []string
	spans []span
	ends  []int
}

// span is one range of a set: lo..hi, each number padded with zeros to width digits.
type span struct{ lo, hi, width int }

// errRanges: the list has more ranges than MaxRanges.
var errRanges = errors.New("more than " + strconv.Itoa(MaxRanges) + " ranges")

// parse reads t into it, counting its ranges into ranges. The syntax and its errors are
// expandOne's.
func (it *item) parse(t string, ranges *int) error {
	it.lits, it.spans, it.ends = it.lits[:0], it.spans[:0], it.ends[:0]
	for rest := t; ; {
		open := strings.IndexByte(rest, '[')
		if open < 0 {
			if strings.IndexByte(rest, ']') >= 0 {
				return fmt.Errorf("%q: ']' without '['", clip80(t))
			}
			it.lits = append(it.lits, rest)
			return nil
		}
		end := strings.IndexByte(rest[open:], ']')
		if end < 0 {
			return fmt.Errorf("%q: '[' without ']'", clip80(t))
		}
		end += open
		if len(it.ends) == maxSets {
			return fmt.Errorf("%q: more than %d bracketed ranges in one name", clip80(t), maxSets)
		}
		it.lits = append(it.lits, rest[:open])
		for r := range strings.SplitSeq(rest[open+1:end], ",") {
			if *ranges++; *ranges > MaxRanges {
				return errRanges
			}
			sp, err := parseSpan(strings.TrimSpace(r))
			if err != nil {
				return fmt.Errorf("%q: %w", clip80(t), err)
			}
			it.spans = append(it.spans, sp)
		}
		it.ends = append(it.ends, len(it.spans))
		rest = rest[end+1:]
	}
}

// parseSpan reads "1-3" or "07" as expandRange does: padded to the width of the low end
// where it starts with a zero.
func parseSpan(r string) (span, error) {
	lo, hi, isRange := strings.Cut(r, "-")
	a, err := strconv.Atoi(lo)
	if err != nil || a < 0 {
		return span{}, fmt.Errorf("%q is not a number or a range like 1-4", clip80(r))
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(hi); err != nil || b < a {
			return span{}, fmt.Errorf("%q is not a range like 1-4", clip80(r))
		}
	}
	width := 0
	if len(lo) > 1 && lo[0] == '0' {
		width = len(lo)
	}
	return span{a, b, width}, nil
}

// set is the spans of set j.
func (it *item) set(j int) []span {
	from := 0
	if j > 0 {
		from = it.ends[j-1]
	}
	return it.spans[from:it.ends[j]]
}

// size is how many names it names, up to maxSize.
func (it *item) size() uint64 {
	n := uint64(1)
	for j := range it.ends {
		var k uint64
		for _, sp := range it.set(j) {
			k = addSat(k, uint64(sp.hi)-uint64(sp.lo)+1)
		}
		n = mulSat(n, k)
	}
	return n
}

// each is Each for one item, from set j on, with buf holding the name so far.
func (it *item) each(buf []byte, j int, f func([]byte) bool) bool {
	buf = append(buf, it.lits[j]...)
	if j == len(it.ends) {
		return f(buf)
	}
	for _, sp := range it.set(j) {
		for v := sp.lo; ; v++ {
			if !it.each(appendPadded(buf, v, sp.width), j+1, f) {
				return false
			}
			if v == sp.hi {
				break
			}
		}
	}
	return true
}

// appendPadded appends v in decimal, with zeros in front up to width digits.
func appendPadded(buf []byte, v, width int) []byte {
	for d := digits(v); d < width; d++ {
		buf = append(buf, '0')
	}
	return strconv.AppendInt(buf, int64(v), 10)
}

func digits(v int) int {
	d := 1
	for ; v >= 10; v /= 10 {
		d++
	}
	return d
}

// match says whether it names name, from set j on: the name's digits after each
// literal are tried at every split, numerically against the set's spans.
func (it *item) match(name string, j int) bool {
	name, ok := strings.CutPrefix(name, it.lits[j])
	if !ok {
		return false
	}
	if j == len(it.ends) {
		return name == ""
	}
	d := 0
	for d < len(name) && '0' <= name[d] && name[d] <= '9' {
		d++
	}
	set := it.set(j)
	for i := 1; i <= d; i++ {
		if inSpans(set, name[:i]) && it.match(name[i:], j+1) {
			return true
		}
	}
	return false
}

// inSpans says whether the digits num are a number of set as the set writes it: in a
// span, with that span's padding (n[01-10] names n01 and n10, not n1 or n010).
func inSpans(set []span, num string) bool {
	sig := strings.TrimLeft(num, "0")
	if sig == "" {
		sig = "0"
	}
	v, err := strconv.Atoi(sig)
	if err != nil {
		return false
	}
	for _, sp := range set {
		if sp.lo <= v && v <= sp.hi && len(num) == max(sp.width, len(sig)) {
			return true
		}
	}
	return false
}

func addSat(a, b uint64) uint64 {
	if a > maxSize-min(b, maxSize) {
		return maxSize
	}
	return a + b
}

func mulSat(a, b uint64) uint64 {
	if a != 0 && b > maxSize/a {
		return maxSize
	}
	return a * b
}

// NodeSet is a cluster's node names, which the host lists a job carries are read
// against. Build it once per inventory; it is read-only after.
type NodeSet struct {
	names []string
	index map[string]int
}

// NewNodeSet is the set of names, in their order, each once.
func NewNodeSet(names []string) *NodeSet {
	s := &NodeSet{index: make(map[string]int, len(names))}
	for _, n := range names {
		if _, dup := s.index[n]; !dup {
			s.index[n] = len(s.names)
			s.names = append(s.names, n)
		}
	}
	return s
}

// Len is how many names s holds.
func (s *NodeSet) Len() int { return len(s.names) }

// Required reads a list every name of which must be a node (--nodelist): its names in
// its order, each once, up to the first name s does not have, which is missing ("" when
// there is none). It looks at no more names of h than s holds, its repeats and one.
func (s *NodeSet) Required(h Hostlist) (names []string, missing string) {
	seen := make([]bool, len(s.names))
	h.Each(func(b []byte) bool {
		i, ok := s.index[string(b)]
		if !ok {
			missing = string(b)
			return false
		}
		if !seen[i] {
			seen[i] = true
			names = append(names, s.names[i])
		}
		return true
	})
	return names, missing
}

// Covered is the names of s that h names, each once, in s's order (--exclude, a
// reservation's nodes): names s does not have mean nothing here and cost nothing. An
// item naming no more names than s holds is walked; a larger one is tested against
// each name of s.
func (s *NodeSet) Covered(h Hostlist) []string {
	in := make([]bool, len(s.names))
	n := 0
	mark := func(i int) {
		if !in[i] {
			in[i] = true
			n++
		}
	}
	buf := make([]byte, 0, 64)
	h.items(func(it *item) bool {
		if it.size() <= uint64(len(s.names)) {
			it.each(buf, 0, func(b []byte) bool {
				if i, ok := s.index[string(b)]; ok {
					mark(i)
				}
				return true
			})
			return true
		}
		for i, name := range s.names {
			if !in[i] && it.match(name, 0) {
				mark(i)
			}
		}
		return true
	})
	out := make([]string, 0, n)
	for i, name := range s.names {
		if in[i] {
			out = append(out, name)
		}
	}
	return out
}
