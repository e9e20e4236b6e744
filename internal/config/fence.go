package config

import (
	"errors"
	"strings"
)

// Fence says whether a shard job needs a memory fence on its GPU: a limit that nothing
// the job controls can lift (see inventory.GPU.Fence). MIG instances (the hardware's
// fence) and whole GPUs (no neighbour to hurt) are never affected.
type Fence string

const (
	// FenceOff: shard slices go wherever they fit, fenced or not (the default: a site
	// whose drivers set no per-cgroup limit keeps the behaviour it had).
	FenceOff Fence = "off"
	// FencePrefer: shard slices go to the partitions whose GPUs are all fenced when
	// those hold the job now, elsewhere when nothing fenced does.
	FencePrefer Fence = "prefer"
	// FenceRequire: a shard slice is given only where every GPU the job could land on
	// is fenced; otherwise a MIG instance or a whole GPU, or a refusal that says why.
	FenceRequire Fence = "require"
)

func parseFence(v string) (Fence, error) {
	switch f := Fence(strings.ToLower(v)); f {
	case FenceOff, FencePrefer, FenceRequire:
		return f, nil
	}
	return "", errors.New("want off (shard slices on any GPU), prefer (fenced GPUs first) or require (shard slices only on fenced GPUs)")
}
