package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/gresconf"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// options are gpumemd's settings: the [gpumemd] section of gpumem.conf with flags on
// top, plus the shared top-level keys.
type options struct {
	config.Gpumemd
	ConfPath string
	Once     bool // write gres.conf and the inventory once and exit
	Version  bool // print the version and exit
	Shared   config.Config
	MIG      config.MIG      // the [mig] section, with the --mig-* flags on top
	given    map[string]bool // the flags the command line gave
	NoConf   bool            // the default gpumem.conf is missing: built-in defaults
}

// parseArgs reads flags twice: once to find --config, then over the file's values,
// so a flag given on the command line wins over the file and the file over defaults.
// A flag gpumemd does not have, or a value a flag never takes, is a usageError; -h is
// pflag.ErrHelp.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	o.Gpumemd, o.MIG = config.DefaultGpumemd(), config.DefaultMIG()
	fs := newFlags(&o, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return o, err
		}
		return o, usageError{cliflag.Explain(err)}
	}
	if o.Version {
		return o, nil
	}
	if err := checkNoArgs(fs); err != nil {
		return o, err
	}
	if err := o.confMissing(fs.Changed("config")); err != nil {
		return o, err
	}
	file, err := config.LoadGpumemd(o.ConfPath)
	if err != nil {
		return o, err
	}
	o.Gpumemd = file
	if o.MIG, err = config.LoadMIG(o.ConfPath); err != nil {
		return o, err
	}
	second := newFlags(&o, io.Discard)
	if err := second.Parse(args); err != nil {
		return o, err
	}
	o.given = map[string]bool{}
	second.Visit(func(f *pflag.Flag) { o.given[f.Name] = true })
	// The shared keys (ShardUnit, SlurmConf, InventoryPath) never stop the sidecar; their
	// reader keeps safe defaults for whatever is wrong and says so.
	o.Shared, err = config.Load(o.ConfPath)
	return o, warning{err}
}

// confMissing refuses a gpumem.conf the admin named (--config, $GPUMEM_CONF) that is
// not there, rather than running on built-in defaults they did not ask for; the default
// path missing is only noted (o.NoConf), since a node may run on the defaults.
func (o *options) confMissing(flag bool) error {
	if _, err := os.Stat(o.ConfPath); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	switch {
	case flag:
		return usageError{fmt.Errorf("--config %s: no such file; name an existing gpumem.conf, or leave --config out for %s or the built-in defaults", o.ConfPath, config.DefaultPath)}
	case os.Getenv(config.PathEnv) != "":
		return fmt.Errorf("$%s names %s, which does not exist; name an existing gpumem.conf, or unset it for %s or the built-in defaults", config.PathEnv, o.ConfPath, config.DefaultPath)
	}
	o.NoConf = true
	return nil
}

// warning is a configuration problem worth logging but not worth stopping for.
type warning struct{ err error }

func (w warning) Error() string {
	if w.err == nil {
		return ""
	}
	return w.err.Error()
}

// usageError is a mistake in the command line itself: gpumemd exits 2 for it.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() + " (gpumemd --help lists the flags)" }
func (u usageError) Unwrap() error { return u.err }

// newFlags is a flag set over o that parses on its own: parseArgs' two passes. Its help
// is cobra's (newRoot), so pflag prints none.
func newFlags(o *options, out io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gpumemd", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {}
	addFlags(fs, o)
	return fs
}

// addFlags registers gpumemd's flags over o, whose values are their defaults; the same
// set makes gpumemd's help and manual page. Every flag but --config, --version and
// --once is a key of gpumem.conf's [gpumemd] or [mig] section, registered from that
// section's key table, so that it takes what the key takes and means the same.
func addFlags(fs *pflag.FlagSet, o *options) {
	fs.StringVar(&o.ConfPath, "config", config.Path(), "gpumem.conf ($"+config.PathEnv+" names another); gpumemd reads its [gpumemd] and [mig] sections and the shared ShardUnit and SlurmConf")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	fs.BoolVar(&o.Once, "once", false, "discover the GPUs once, write gres.conf and/or the inventory (--write-gres, --write-inventory), and exit; serves, measures and enforces nothing")
	addKeys(fs, &o.Gpumemd, config.GpumemdKeys())
	addKeys(fs, &o.MIG, config.MIGKeys())
	fs.Lookup(nvmlsrc.FlagName).Usage = "NVML backend: " + nvmlsrc.Usage
}

// flagChecks are checks a flag makes on top of its key's setter, for what only gpumemd
// can judge (config does not link NVML); checkValues makes them on the file's value.
var flagChecks = map[string]func(string) error{nvmlsrc.FlagName: nvmlsrc.CheckSpec}

// addKeys registers a flag for each key that has one, over *c.
func addKeys[C any](fs *pflag.FlagSet, c *C, keys []config.Key[C]) {
	for _, k := range keys {
		if k.Flag == "" {
			continue
		}
		f := fs.VarPF(keyFlag[C]{c, k, flagChecks[k.Flag]}, k.Flag, "", k.Help)
		if k.Type == "bool" {
			f.NoOptDefVal = "true"
		}
	}
}

// keyFlag is the flag of one key: it sets the key's field through the key's setter.
type keyFlag[C any] struct {
	c     *C
	k     config.Key[C]
	check func(string) error
}

func (f keyFlag[C]) String() string { return f.k.Get(f.c) }
func (f keyFlag[C]) Type() string   { return f.k.Type }
func (keyFlag[C]) SaysWhy()         {}

// Set reads v as the file reads a value: without the blanks around it.
func (f keyFlag[C]) Set(v string) error {
	v = strings.TrimSpace(v)
	if f.check != nil {
		if err := f.check(v); err != nil {
			return err
		}
	}
	return f.k.Set(f.c, v)
}

// check rejects combinations no single key can, and values no key takes. A problem
// with a flag given on the command line is a usageError (status 2); one that comes from
// gpumem.conf alone is gpumemd failing to start (status 1).
func (o options) check() error {
	if err := o.checkValues(); err != nil {
		var b badOption
		if errors.As(err, &b) && slices.ContainsFunc(b.flags, func(f string) bool { return o.given[f] }) {
			return usageError{b.err}
		}
		return err
	}
	return nil
}

// badOption is a refused setting and the flags (or the keys they stand for) it concerns.
type badOption struct {
	flags []string
	err   error
}

func (b badOption) Error() string { return b.err.Error() }
func (b badOption) Unwrap() error { return b.err }

func bad(err error, flags ...string) error { return badOption{flags, err} }

func (o options) checkValues() error {
	if o.MIG.Apply && o.MIG.Desired == "" {
		return bad(fmt.Errorf("--mig-apply applies the layouts of --mig-desired: give that directory too"), "mig-apply")
	}
	if o.UsagePolicy == "kill" && o.UsageGrace < o.PollInterval {
		return bad(fmt.Errorf("--usage-grace %s is shorter than --poll-interval %s: a job would be killed on the first poll that saw it over; give it at least one poll", o.UsageGrace, o.PollInterval),
			"usage-grace", "poll-interval", "usage-policy")
	}
	if (o.IdlePolicy == "requeue" || o.IdlePolicy == "cancel") && o.IdleAfter < o.PollInterval {
		return bad(fmt.Errorf("--idle-after %s is shorter than --poll-interval %s: a job would be %sed on the first poll that saw it idle", o.IdleAfter, o.PollInterval, o.IdlePolicy),
			"idle-after", "poll-interval", "idle-policy")
	}
	if o.Once && !o.WriteGres && !o.WriteInventory {
		return bad(fmt.Errorf("--once writes gres.conf or the inventory and exits: add --write-gres, --write-inventory or both"))
	}
	if o.SlurmVersion != "auto" {
		if _, err := gresconf.ResolveRelease(o.SlurmVersion); err != nil {
			return bad(err, "slurm-version")
		}
	}
	if err := nvmlsrc.CheckSpec(o.NVML); err != nil {
		return bad(err, nvmlsrc.FlagName)
	}
	return nil
}
