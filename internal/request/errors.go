package request

import "fmt"

// SizeError is a memory size that cannot be read.
type SizeError struct {
	Token string // the size as typed
	Why   string
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("GPU memory size %q %s; e.g. gpu:mem:20g (20 GiB), gpu:mem:20480m, gpu:mem:1.5t", e.Token, e.Why)
}

// EntryError is one GRES entry that cannot be read.
type EntryError struct {
	Field string // tres_per_node, ...
	Token string // the entry as typed
	Why   string
	Valid string // a valid example
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("%s entry %q %s; e.g. %s", e.Field, e.Token, e.Why, e.Valid)
}
