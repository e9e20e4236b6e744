package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/units"
)

// sizeMiB is a flag holding a GPU memory size in MiB, written with its unit as in the
// request language (1G, 512M, 2GiB); a bare number is refused.
type sizeMiB struct{ mib *int64 }

func (s sizeMiB) String() string {
	if s.mib == nil {
		return ""
	}
	return units.FormatFlag(*s.mib)
}

func (s sizeMiB) Set(v string) error {
	n, err := units.Setting(v, units.UnitRequired)
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
	fs.Var(sizeMiB{mib}, "shard-unit", usage+" (1G, 512M, 2GiB; default: gpumem.conf's ShardUnit)")
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
	sizes, err := units.Settings(v, units.UnitRequired)
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

// addConfig registers --config, the gpumem.conf whose shared keys are the defaults of
// the flags that name them (--shard-unit, --shard-types), as gpumemd reads them.
func addConfig(fs *pflag.FlagSet) {
	fs.String("config", confDefault(), "gpumem.conf, whose ShardUnit and ShardTypes are the defaults of --shard-unit and --shard-types, as gpumemd reads them (a named file must exist; the default missing: built-in defaults)")
}

// sharedConf is the gpumem.conf that cmd's --config names (else $GPUMEM_CONF or the
// default path): its shared keys are the defaults of flags the command line leaves out.
func sharedConf(cmd *cobra.Command) (config.Config, error) {
	path, err := confPath(cmd)
	if err != nil {
		return config.Default(), err
	}
	c, err := config.Load(path)
	if err != nil {
		return c, fmt.Errorf("--config %s: %w", path, err)
	}
	return c, nil
}

// confShardUnit sets *mib to gpumem.conf's ShardUnit unless --shard-unit was given, so
// gpumemctl counts shards with the unit gpumemd and the plugins use.
func confShardUnit(cmd *cobra.Command, mib *int64) error {
	if cmd.Flags().Changed("shard-unit") || cmd.Flags().Changed("shard-unit-mib") {
		return nil
	}
	c, err := sharedConf(cmd)
	if err != nil {
		return err
	}
	*mib = c.ShardUnitMiB
	return nil
}

// confPath is the gpumem.conf cmd reads: --config, else $GPUMEM_CONF, else the default
// path. A --config that is not there is a usage error, never silently the built-in
// defaults; $GPUMEM_CONF or the default path missing means them, as the plugins read it.
func confPath(cmd *cobra.Command) (string, error) {
	f := cmd.Flags().Lookup("config")
	if f == nil {
		return confDefault(), nil
	}
	path := f.Value.String()
	if _, err := os.Stat(path); f.Changed && errors.Is(err, fs.ErrNotExist) {
		return path, usageError(fmt.Errorf("--config %s: no such file; name an existing gpumem.conf, or leave --config out for $%s, %s or the built-in defaults", path, config.PathEnv, config.DefaultPath))
	}
	return path, nil
}

// shardFlags are --shard-unit, --shard-types and --config where a command renders or
// values GRES: gpumem.conf's ShardUnit and ShardTypes, with the flags given on top, so
// that gpumemctl names and counts shards as gpumemd writes them on the same cluster.
type shardFlags struct{ unit, types string }

func (s *shardFlags) add(fs *pflag.FlagSet) {
	s.unit, s.types = "1G", "none"
	fs.Var(cliflag.NewChecked(&s.unit, func(v string) error { _, err := units.Setting(v, units.UnitRequired); return err }), "shard-unit", "GPU memory one shard stands for, with its unit (1G, 512M, 2GiB); default: gpumem.conf's ShardUnit")
	fs.Var(cliflag.NewChoice(&s.types, "none", "per-gpu"), "shard-types", "none, or per-gpu for a shard Type per GPU (whole GPUs then carry per-GPU types too); default: gpumem.conf's ShardTypes")
	addConfig(fs)
}

// settings are the shard unit in MiB and whether shards are typed per GPU.
func (s *shardFlags) settings(cmd *cobra.Command) (int64, bool, error) {
	conf, err := sharedConf(cmd)
	if err != nil {
		return 0, false, err
	}
	unit, perGPU := conf.ShardUnitMiB, conf.ShardTypes == config.ShardTypesPerGPU
	if cmd.Flags().Changed("shard-unit") {
		if unit, err = units.Setting(s.unit, units.UnitRequired); err != nil {
			return 0, false, fmt.Errorf("--shard-unit: %w", err)
		}
	}
	if cmd.Flags().Changed("shard-types") {
		perGPU = s.types == "per-gpu"
	}
	return unit, perGPU, nil
}
