package main

import (
	"errors"
	"fmt"
	"github.com/gpumem/gpumem/internal/units"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
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
// set makes gpumemd's help and manual page.
func addFlags(fs *pflag.FlagSet, o *options) {
	c := &o.Gpumemd
	fs.StringVar(&o.ConfPath, "config", config.Path(), "gpumem.conf ($"+config.PathEnv+" names another); gpumemd reads its [gpumemd] and [mig] sections and the shared ShardUnit and SlurmConf")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	fs.BoolVar(&o.Once, "once", false, "discover the GPUs once, write gres.conf and/or the inventory (--write-gres, --write-inventory), and exit; serves, measures and enforces nothing")
	nvmlsrc.AddFlag(fs, &c.NVML)
	fs.StringVar(&c.Listen, "listen", c.Listen, "address for /metrics and /api (HOST:PORT or :PORT); loopback by default, :9402 for a Prometheus elsewhere")
	fs.BoolVar(&c.APIPublic, "api-public", c.APIPublic, "serve /api (per-job history) on a non-loopback --listen without --web.config.file")
	fs.StringVar(&c.WebConfigFile, "web.config.file", c.WebConfigFile, "Prometheus exporter-toolkit web config for TLS and basic auth")
	fs.StringVar(&c.NodeName, "node", c.NodeName, "Slurm NodeName of this node (default: the short host name)")
	fs.DurationVar(&c.PollInterval, "poll-interval", c.PollInterval, "how often NVML is read")
	fs.BoolVar(&c.WriteGres, "write-gres", c.WriteGres, "keep --gres-conf in step with the GPUs")
	fs.StringVar(&c.GresConf, "gres-conf", c.GresConf, "gres.conf to write")
	fs.BoolVar(&c.WriteInventory, "write-inventory", c.WriteInventory, "write this node's inventory to --inventory-dir/NODE.json for the plugins")
	fs.StringVar(&c.InventoryDir, "inventory-dir", c.InventoryDir, "per-node inventory directory")
	fs.DurationVar(&c.GresInterval, "gres-interval", c.GresInterval, "how often GPUs are re-discovered for gres.conf")
	fs.StringVar(&c.GresHook, "gres-hook", c.GresHook, "shell command run after gres.conf changed, e.g. 'systemctl restart slurmd'")
	fs.StringVar(&c.GresDevPrefix, "dev-prefix", c.GresDevPrefix, "replaces /dev in gres.conf File= lines (a lab's fake device nodes)")
	fs.StringVar(&c.SlurmVersion, "slurm-version", c.SlurmVersion, "Slurm release gres.conf is for (22.05.8, 24.11, ...); auto asks slurmd -V")
	fs.Func("usage-policy", "what to do with a job over its slice: record, warn or kill (default "+c.UsagePolicy+")", func(v string) error {
		p, err := config.ParseUsagePolicy(v)
		c.UsagePolicy = p
		return err
	})
	fs.DurationVar(&c.UsageGrace, "usage-grace", c.UsageGrace, "how long a job may stay over its slice before kill")
	fs.BoolVar(&c.UsageNotify, "usage-notify", c.UsageNotify, "also tell the job through scontrol notify")
	fs.BoolVar(&c.Drain, "drain", c.Drain, "drain the node on NVML failure, a lost GPU or a critical XID")
	fs.BoolVar(&c.Resume, "resume", c.Resume, "resume a node gpumemd drained once it is healthy")
	fs.Func("critical-xids", "comma-separated XIDs that drain (default: the built-in list)", func(v string) error {
		x, err := config.ParseXIDs(v)
		c.CriticalXIDs = x
		return err
	})
	fs.DurationVar(&c.XIDHold, "xid-hold", c.XIDHold, "how long a critical XID counts as a problem; 0 until an admin resumes the node")
	fs.IntVar(&c.DrainAfter, "drain-after", c.DrainAfter, "consecutive bad polls before a drain")
	fs.IntVar(&c.ResumeAfter, "resume-after", c.ResumeAfter, "consecutive good polls before a resume")
	fs.StringVar(&c.HealthState, "health-state", c.HealthState, "file that keeps held XIDs, the GPUs seen and gpumemd's drain across restarts; empty keeps nothing")
	fs.StringVar(&c.Scontrol, "scontrol", c.Scontrol, "scontrol binary used to drain and resume, and to read what Slurm allocated each job")
	fs.StringVar(&c.HistoryDB, "history-db", c.HistoryDB, "SQLite history file; empty keeps no history")
	fs.DurationVar(&c.HistoryBucket, "history-bucket", c.HistoryBucket, "one history sample per job per bucket")
	fs.DurationVar(&c.HistoryKeepSamples, "history-keep-samples", c.HistoryKeepSamples, "how long samples are kept")
	fs.DurationVar(&c.HistoryKeepJobs, "history-keep-jobs", c.HistoryKeepJobs, "how long ended jobs are kept")
	fs.StringVar(&o.MIG.Desired, "mig-desired", o.MIG.Desired, "directory of desired MIG layout files (NODE.json, from gpumemctl mig plan --out); empty leaves MIG alone")
	fs.BoolVar(&o.MIG.Apply, "mig-apply", o.MIG.Apply, "really repartition this node's GPUs to --mig-desired (drain, wait, apply, resume); without it the steps are only logged")
	fs.StringVar(&o.MIG.Journal, "mig-journal", o.MIG.Journal, "journal of a MIG apply, so a restart finishes or rolls it back")
	fs.DurationVar(&o.MIG.IdleTimeout, "mig-idle-timeout", o.MIG.IdleTimeout, "how long a MIG apply waits for the node's jobs before it gives up and resumes the node")
	fs.StringVar(&o.MIG.Reload, "mig-reload", o.MIG.Reload, "shell command run after a MIG apply rewrote gres.conf, to make slurmd and slurmctld read it (e.g. 'systemctl restart slurmd && scontrol reconfigure')")
	fs.Func("idle-policy", "what to do with a job holding GPU memory it does not use: off, record, warn, requeue or cancel (default "+c.IdlePolicy+")", func(v string) error {
		p, err := config.ParseIdlePolicy(v)
		c.IdlePolicy = p
		return err
	})
	fs.DurationVar(&c.IdleAfter, "idle-after", c.IdleAfter, "how long a job may hold GPU memory idle before the idle policy acts")
	fs.DurationVar(&c.IdleGrace, "idle-grace", c.IdleGrace, "from the idle warning to requeue or cancel")
	fs.Func("idle-utilization", "a job with GPU processes counts as idle when its GPUs are busy less than this fraction (0: never)", func(v string) error {
		f, err := config.ParseRatio(v)
		c.IdleUtilization = f
		return err
	})
	fs.DurationVar(&c.IdleInterval, "idle-interval", c.IdleInterval, "how often the jobs running here are listed for the idle policy")
	fs.Func("idle-exempt-qos", "comma-separated QOS whose jobs the idle policy never acts on", func(v string) error {
		c.IdleExemptQOS = config.ParseList(v)
		return nil
	})
	fs.Func("idle-exempt-accounts", "comma-separated accounts whose jobs the idle policy never acts on", func(v string) error {
		c.IdleExemptAccounts = config.ParseList(v)
		return nil
	})
	fs.BoolVar(&c.IdleInteractive, "idle-interactive", c.IdleInteractive, "let the idle policy act on interactive jobs (salloc, srun) too")
	fs.StringVar(&c.FenceCgroupRoot, "fence-cgroup-root", c.FenceCgroupRoot, "the cgroup2 mount (Slurm's CgroupMountpoint), where the dmem controller must be offered for the driver fence")
	fs.Func("fence-cgroup-scope", "below --fence-cgroup-root, the directory Slurm's cgroup/v2 puts job_ID in (default "+c.FenceCgroupScope+")", func(v string) error {
		p, err := config.ParseCgroupScope(v)
		c.FenceCgroupScope = p
		return err
	})
	fs.Func("fence-failure", "when the prolog cannot set a job's driver fence: fail (the prolog fails) or drain (gpumemd's drain reason first) (default "+c.FenceFailure+")", func(v string) error {
		p, err := config.ParseFenceFailure(v)
		c.FenceFailure = p
		return err
	})
	fs.StringVar(&c.FenceFailures, "fence-failures", c.FenceFailures, "file that counts failed driver fences, one line each; empty counts nowhere")
	fs.StringVar(&c.FenceState, "fence-state", c.FenceState, "directory where the prolog records each job's fence for the task prolog")
	fs.Func("fragmentation-sizes", "request sizes fragmentation is measured against, each with its unit (default "+sizes(c.FragmentationSizesMiB)+")", func(v string) error {
		s, err := units.Settings(v, units.UnitRequired)
		c.FragmentationSizesMiB = s
		return err
	})
}

func sizes(mib []int64) string {
	var parts []string
	for _, m := range mib {
		parts = append(parts, strconv.FormatInt(m/1024, 10)+"G")
	}
	return strings.Join(parts, ",")
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
	if o.MIG.Desired != "" && o.MIG.IdleTimeout <= 0 {
		return bad(fmt.Errorf("--mig-idle-timeout %s: want a positive duration such as 10m", o.MIG.IdleTimeout), "mig-idle-timeout")
	}
	if o.PollInterval <= 0 {
		return bad(fmt.Errorf("--poll-interval %s: want a positive duration such as 10s", o.PollInterval), "poll-interval")
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
	if o.DrainAfter < 1 || o.ResumeAfter < 1 {
		return bad(fmt.Errorf("--drain-after %d, --resume-after %d: want at least 1 poll each", o.DrainAfter, o.ResumeAfter), "drain-after", "resume-after")
	}
	if _, err := config.ParseListen(o.Listen); err != nil {
		return bad(fmt.Errorf("--listen %q: %w", o.Listen, err), "listen")
	}
	if err := nvmlsrc.CheckSpec(o.NVML); err != nil {
		return bad(err, nvmlsrc.FlagName)
	}
	return nil
}
