// Package request reads what users type to ask for GPU memory (--gres=gpu:mem:20g) out of
// the TRES strings Slurm hands a job_submit or cli_filter plugin, and writes the rewritten
// strings back. Entries it does not own stay byte for byte as they were.
package request

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// Field names, for error messages: the option a user writes to fill each of Slurm's
// job_desc fields (tres_per_node, tres_per_job, tres_per_socket, tres_per_task), since
// users never see the field names.
const (
	PerNode   = "--gres"
	PerJob    = "--gpus"
	PerSocket = "--gpus-per-socket"
	PerTask   = "--gpus-per-task"
)

// Kind says what an entry asks for.
type Kind uint8

const (
	Other    Kind = iota // anything not ours: kept as typed
	GPUMem               // gpu:mem:SIZE
	GPUCount             // gpu, gpu:N, gpu:TYPE, gpu:TYPE:N
)

// Entry is one comma- or semicolon-separated part of a TRES string.
type Entry struct {
	Raw    string // exactly as typed, separator excluded
	Sep    string // the separator after it: ",", ";" or "" for the last
	Prefix string // slurmgres.Colon (22.05, 23.02), slurmgres.Slash (23.11+) or "" (cli_filter, --gres as typed)
	Kind   Kind
	Type   string // GPU type of a GPUCount entry, e.g. "h100"; "" when untyped
	MiB    int64  // GPUMem: memory per GPU
	GPUs   int64  // GPUCount: number of GPUs
}

// TRES is one parsed tres_per_* string.
type TRES struct {
	Field   string
	Entries []Entry
}

// MaxGPUs bounds a GPU count; nothing real has more per job, and it keeps arithmetic sane.
const MaxGPUs = 1 << 20

// Parse reads one tres_per_* string. field names it in errors (PerNode, ...).
func Parse(field, s string) (TRES, error) {
	t := TRES{Field: field}
	if s == "" {
		return t, nil
	}
	t.Entries = make([]Entry, 0, 1+strings.Count(s, ",")+strings.Count(s, ";"))
	for {
		i := strings.IndexAny(s, ",;")
		raw, sep := s, ""
		if i >= 0 {
			raw, sep = s[:i], s[i:i+1]
		}
		e, err := parseEntry(field, raw)
		if err != nil {
			return TRES{}, err
		}
		e.Sep = sep
		t.Entries = append(t.Entries, e)
		if i < 0 {
			return t, nil
		}
		s = s[i+1:]
	}
}

func parseEntry(field, raw string) (Entry, error) {
	e := Entry{Raw: raw}
	body, prefix := slurmgres.CutPrefix(raw)
	e.Prefix = prefix
	// Slurm writes a count after ':' in gres strings and after '=' in TRES strings.
	name, rest, found := strings.Cut(body, ":")
	if !found {
		name, rest, found = strings.Cut(body, "=")
	}
	if name != "gpu" {
		return e, nil
	}
	// At most three ':' parts matter; a fixed array keeps the hot path free of allocation.
	var buf [3]string
	parts := buf[:0]
	for found && len(parts) < len(buf) {
		var p string
		p, rest, found = strings.Cut(rest, ":")
		parts = append(parts, p)
	}
	if found {
		parts = append(parts, rest) // a fourth part: reported as too many below
	}
	bad := func(why, valid string) (Entry, error) {
		return Entry{}, &EntryError{Field: field, Token: raw, Why: why, Valid: valid}
	}
	if len(parts) > 0 && parts[0] == "mem" {
		if len(parts) != 2 {
			return bad(refusal.EntryOneSize, refusal.EntryOneSizeValid)
		}
		mib, err := ParseSize(parts[1])
		if err != nil {
			return Entry{}, &EntryError{Field: field, Token: raw, Why: refusal.EntryBadSize + err.(*SizeError).Why, Valid: refusal.EntrySizeValid}
		}
		e.Kind, e.MiB = GPUMem, mib
		return e, nil
	}
	e.Kind, e.GPUs = GPUCount, 1
	switch len(parts) {
	case 0:
	case 1:
		if isDigits(parts[0]) {
			e.GPUs = -1
		} else {
			e.Type = parts[0]
		}
	case 2:
		e.Type = parts[0]
		e.GPUs = -1
	default:
		return bad(refusal.EntryTooManyParts, refusal.EntryTypeValid)
	}
	if e.Type == "" && len(parts) > 0 && parts[0] == "" || e.Type != "" && !validType(e.Type) {
		return bad(refusal.EntryBadType, refusal.EntryTypeValid)
	}
	if e.GPUs < 0 {
		n, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange), err == nil && n > MaxGPUs:
			return bad(refusal.EntryTooManyGPUs, refusal.EntryCountValid)
		case err != nil || !isDigits(parts[len(parts)-1]):
			return bad(refusal.EntryNotWhole, refusal.EntryCountValid)
		case n == 0:
			return bad(refusal.EntryZeroGPUs, refusal.EntryOneGPUValid)
		}
		e.GPUs = n
	}
	return e, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func validType(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '+') {
			return false
		}
	}
	return s != ""
}

// String writes the entries back, each as typed unless it was replaced.
func (t TRES) String() string {
	n := 0
	for _, e := range t.Entries {
		n += len(e.Raw) + len(e.Sep)
	}
	var b strings.Builder
	b.Grow(n)
	for i, e := range t.Entries {
		b.WriteString(e.Raw)
		if i < len(t.Entries)-1 {
			sep := e.Sep
			if sep == "" {
				sep = ","
			}
			b.WriteString(sep)
		}
	}
	return b.String()
}

// Find returns the index of the first entry of kind k, or -1.
func (t TRES) Find(k Kind) int {
	for i, e := range t.Entries {
		if e.Kind == k {
			return i
		}
	}
	return -1
}

// Rewrite writes t without the entries of the kinds drop says (indexed by Kind), plus add
// (a gres body such as "shard:20", written with prefix) when not empty. Kept entries keep
// their separators.
func (t TRES) Rewrite(drop [3]bool, add, prefix string) string {
	var b strings.Builder
	b.Grow(len(add) + len(prefix) + 8*len(t.Entries))
	sep := ""
	for _, e := range t.Entries {
		if drop[e.Kind] {
			continue
		}
		b.WriteString(sep)
		b.WriteString(e.Raw)
		sep = e.Sep
		if sep == "" {
			sep = ","
		}
	}
	if add != "" {
		b.WriteString(sep)
		b.WriteString(prefix)
		b.WriteString(add)
	}
	return b.String()
}

// Prefix is the gres prefix the string uses (slurmgres.Colon, slurmgres.Slash or "").
func (t TRES) Prefix() string {
	for _, e := range t.Entries {
		if e.Prefix != "" {
			return e.Prefix
		}
	}
	return ""
}

// AsksMem is the one rule for "does this job ask for GPU memory": one of its four GRES
// fields (per node, per job, per socket, per task) holds a gpu:mem entry, well formed or
// not. Only such jobs are gpumem's: any other is never parsed, translated or refused.
// The plugins' C shims pass a job on without entering Go where gpumem_has_mem
// (cgo/include/gpumem_job.h), a cheaper and looser test, says no; it says yes wherever
// this does.
func AsksMem(perNode, perJob, perSocket, perTask string) bool {
	return HasMem(perNode) || HasMem(perJob) || HasMem(perSocket) || HasMem(perTask)
}

// HasMem reports, without allocating, whether s holds a gpu:mem entry (well formed or
// not): AsksMem on one field.
func HasMem(s string) bool {
	if !strings.Contains(s, "gpu:mem") {
		return false // every gpu:mem entry spells it whole: most jobs end here, at memchr's speed
	}
	for s != "" {
		raw := s
		if i := strings.IndexAny(s, ",;"); i >= 0 {
			raw, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		raw = slurmgres.Strip(raw)
		if raw == "gpu:mem" || strings.HasPrefix(raw, "gpu:mem:") {
			return true
		}
	}
	return false
}
