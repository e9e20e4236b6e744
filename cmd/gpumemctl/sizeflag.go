package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/config"
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
