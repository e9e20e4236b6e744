package request

import "github.com/gpumem/gpumem/internal/refusal"

// SizeError is a memory size that cannot be read.
type SizeError struct {
	Token string // the size as typed
	Why   string
}

func (e *SizeError) Error() string { return refusal.Size(e.Token, e.Why) }

// EntryError is one GRES entry that cannot be read.
type EntryError struct {
	Field string // the option that gave it: PerNode, ...
	Token string // the entry as typed
	Why   string
	Valid string // a valid example
}

func (e *EntryError) Error() string { return refusal.Entry(e.Field, e.Token, e.Why, e.Valid) }
