// Package slurmgres reads and writes Slurm's native GRES strings: one GRES such as
// shard:20, gpu:h100:2 or gres/shard:l4_g0:7(7/22,0/22), a comma list of them, the
// per-GPU detail `scontrol -d show job` prints after each, and the index lists in it.
// It knows Slurm's spelling only, not what gpumem makes of a GRES. Pure Go, no I/O.
package slurmgres

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The prefixes Slurm puts on each GRES of a job's TRES strings: Colon up to 23.02, Slash
// from 23.11. Slash also starts every GRES's TRES name in accounting (gres/gpu:h100).
const (
	Colon = "gres:"
	Slash = "gres/"
)

// The GRES names gpumem reads and writes.
const (
	GPU   = "gpu"
	Shard = "shard"
)

// Item is one GRES: [PREFIX]NAME[:TYPE][:COUNT][(DETAIL)].
type Item struct {
	Prefix string // "", Colon or Slash, as written
	Name   string // gpu, shard, mps, ...
	Type   string // "" when untyped
	Count  int64
	// Counted says a count was written; without one (gpu, gpu:h100) Slurm counts 1.
	Counted bool
	// Detail is what the parentheses after the count hold, without them: a job's per-GPU
	// use (IDX:0-1, 23/80,7/80) or a node's sockets (S:0-15); "" for none.
	Detail string
}

// Of is the counted GRES name[:typ]:n, without prefix or detail.
func Of(name, typ string, n int64) Item { return Item{Name: name, Type: typ, Count: n, Counted: true} }

// Error is a GRES string that cannot be read.
type Error struct {
	GRES string // the string, clipped
	Why  string
	Err  error // strconv.ErrRange for a count past int64; nil otherwise
}

func (e *Error) Error() string { return fmt.Sprintf("GRES %q: %s", e.GRES, e.Why) }

func (e *Error) Unwrap() error { return e.Err }

// CutPrefix returns s without its leading Colon or Slash, and the prefix it had ("" for
// none).
func CutPrefix(s string) (body, prefix string) {
	if strings.HasPrefix(s, Colon) || strings.HasPrefix(s, Slash) {
		return s[len(Colon):], s[:len(Colon)]
	}
	return s, ""
}

// Strip is s without its leading Colon or Slash.
func Strip(s string) string {
	body, _ := CutPrefix(s)
	return body
}

// StripAll is a comma list with each item's prefix stripped, as a user would write it.
func StripAll(list string) string {
	items := Split(list)
	for i, it := range items {
		items[i] = Strip(it)
	}
	return strings.Join(items, ",")
}

// Name is the GRES name of one entry, read without checking the rest of it: "shard" of
// gres/shard:a100:20(IDX:0), "" of "".
func Name(entry string) string {
	body := Strip(entry)
	if i := strings.IndexAny(body, ":("); i >= 0 {
		return body[:i]
	}
	return body
}

// Parse reads one GRES. A last ':' part of digits only is the count; a type is never
// digits only, so that what String writes reads back the same. A count past int64 is
// an error that wraps strconv.ErrRange, returned with the rest of the item read and
// Count -1. Parse does not allocate unless it fails.
func Parse(s string) (Item, error) {
	bad := func(why string) (Item, error) { return Item{}, &Error{GRES: clip(s), Why: why} }
	var it Item
	body, prefix := CutPrefix(s)
	it.Prefix = prefix
	if open := strings.IndexByte(body, '('); open >= 0 {
		if !strings.HasSuffix(body, ")") || strings.ContainsAny(body[open+1:len(body)-1], "()") {
			return bad("want one (DETAIL) at the end")
		}
		body, it.Detail = body[:open], body[open+1:len(body)-1]
	}
	name, rest, more := strings.Cut(body, ":")
	if !word(name) {
		return bad("want a name such as gpu or shard, then :TYPE and :COUNT")
	}
	it.Name = name
	if !more {
		return it, nil
	}
	typ, count, two := strings.Cut(rest, ":")
	switch {
	case strings.IndexByte(count, ':') >= 0:
		return bad("has too many ':' parts; want NAME[:TYPE][:COUNT]")
	case !two && digits(typ):
		typ, count = "", typ
	}
	if typ != "" || two {
		if !word(typ) || digits(typ) {
			return bad("has an empty or malformed type")
		}
		it.Type = typ
	}
	if count != "" || two {
		n, err := strconv.ParseInt(count, 10, 64)
		if digits(count) && errors.Is(err, strconv.ErrRange) {
			it.Count, it.Counted = -1, true // a caller refusing the item still has its name and type
			return it, &Error{GRES: clip(s), Why: "has a count past " + strconv.FormatInt(math.MaxInt64, 10), Err: strconv.ErrRange}
		}
		if err != nil || !digits(count) {
			return bad("has a count that is not a whole number")
		}
		it.Count, it.Counted = n, true
	}
	if !two && typ == "" && count == "" {
		return bad("has an empty type or count")
	}
	return it, nil
}

// String writes the item back as Slurm spells it.
func (it Item) String() string {
	var buf [64]byte
	b := append(buf[:0], it.Prefix...)
	b = append(b, it.Name...)
	if it.Type != "" {
		b = append(append(b, ':'), it.Type...)
	}
	if it.Counted {
		b = strconv.AppendInt(append(b, ':'), it.Count, 10)
	}
	if it.Detail != "" {
		b = append(append(append(b, '('), it.Detail...), ')')
	}
	return string(b)
}

// Split splits a comma list of GRES, keeping each item's (DETAIL) whole: a per-GPU
// detail has commas of its own (shard:30(23/80,7/80)). Items are not trimmed.
func Split(list string) []string {
	if list == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				out = append(out, list[start:i])
				start = i + 1
			}
		}
	}
	return append(out, list[start:])
}

// Join writes items as a comma list.
func Join(items []Item) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.String()
	}
	return strings.Join(s, ",")
}

// WithGPU is the entry a --gpus* option's value v becomes, after prefix ("", Colon or
// Slash): gres/gpu:2 of 2, gpu:h100:2 of h100:2.
func WithGPU(prefix, v string) string { return prefix + GPU + ":" + v }

// CutGPU is WithGPU read back: the value after the prefix and "gpu:" of entry, and
// whether entry was gpu's.
func CutGPU(entry string) (v string, ok bool) { return strings.CutPrefix(Strip(entry), GPU+":") }

// TRES is the accounting name of a GRES: gres/shard, gres/gpu, gres/gpu:h100.
func TRES(name, typ string) string {
	if typ == "" {
		return Slash + name
	}
	return Slash + name + ":" + typ
}

// CutTRES reads a TRES name back into the GRES it counts: gpu and h100 of gres/gpu:h100;
// false for a TRES that is no GRES (cpu, mem, billing).
func CutTRES(s string) (name, typ string, ok bool) {
	body, found := strings.CutPrefix(s, Slash)
	if !found || body == "" {
		return "", "", false
	}
	name, typ, _ = strings.Cut(body, ":")
	return name, typ, true
}

// word is a GRES name or type: what Slurm prints, without the bytes that split a GRES
// string (':' ',' ';' '(' ')' '=') or blanks and control bytes.
func word(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(":,;()=", c) >= 0 {
			return false
		}
	}
	return s != ""
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
