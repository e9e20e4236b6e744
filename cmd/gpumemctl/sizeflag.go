package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/shard"
)

// sizeMiB is a flag holding a GPU memory size in MiB, written with its unit as in the
// request language (1G, 512M, 2GiB); a bare number is refused.
type sizeMiB struct{ mib *int64 }

func (s sizeMiB) String() string {
	if s.mib == nil {
		return ""
	}
	if *s.mib%1024 == 0 {
		return fmt.Sprintf("%dG", *s.mib/1024)
	}
	return fmt.Sprintf("%dM", *s.mib)
}

func (s sizeMiB) Set(v string) error {
	n, err := config.ParseSizeMiB(v)
	if err != nil {
		return err
	}
	*s.mib = n
	return nil
}

func (sizeMiB) Type() string { return "size" }

// addShardUnit registers --shard-unit (a size with its unit) into *mib, and the older
// --shard-unit-mib (a bare number of MiB) as its deprecated alias, so scripts that use
// it keep working while they move.
func addShardUnit(fs *pflag.FlagSet, mib *int64, usage string) {
	fs.Var(sizeMiB{mib}, "shard-unit", usage+" (1G, 512M, 2GiB)")
	fs.Int64Var(mib, "shard-unit-mib", *mib, usage+", in MiB")
	_ = fs.MarkDeprecated("shard-unit-mib", "use --shard-unit with a unit, such as --shard-unit 1G")
}

// sizeList is a flag holding GPU memory sizes in MiB, written with their units
// (5G,10G,20G) as the request language writes them; repeated or comma-separated, a size
// given twice counts twice, and the first one given replaces the default. Commands that
// work in shards convert with the final --shard-unit (shards).
type sizeList struct {
	mib     []int64
	changed bool
}

func (s *sizeList) String() string {
	var parts []string
	for _, m := range s.mib {
		parts = append(parts, sizeMiB{&m}.String())
	}
	return strings.Join(parts, ",")
}

func (s *sizeList) Set(v string) error {
	sizes, err := config.ParseSizesWithUnit(v)
	if err != nil {
		return err
	}
	if !s.changed {
		s.mib, s.changed = nil, true
	}
	s.mib = append(s.mib, sizes...)
	return nil
}

func (*sizeList) Type() string { return "sizes" }

// shards is each size in whole shards of unitMiB, rounded up as the plugins round a
// gpu:mem request.
func (s *sizeList) shards(unitMiB int64) []int64 {
	var out []int64
	for _, m := range s.mib {
		out = append(out, shard.For(m, unitMiB))
	}
	return out
}
