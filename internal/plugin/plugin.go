// Package plugin is the Go logic behind the job_submit/gpumem and cli_filter/gpumem Slurm
// plugins: cached configuration and inventory, the call into the placement core, what to
// do when gpumem itself fails, and logging. It has no cgo, so it is tested without Slurm;
// the C shims in cgo/ only move strings between Slurm's structures and this package.
package plugin

import (
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/admit"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/version"
)

// Fields are the job_desc fields gpumem reads, as Slurm holds them. Partition is a
// comma-separated list, as in --partition. ReqNodes is the required node list
// (--nodelist), which only job_submit's pinning writes. The GRES fields and Partition
// may be rewritten; the rest is the job's shape, which gpumem reads and never writes back.
type Fields struct {
	PerNode, PerJob, PerSocket, PerTask, Partition string
	ReqNodes                                       string

	// --exclude, --constraint, --reservation and --array as Slurm holds them.
	ExcNodes, Features, Reservation, ArrayInx string
	// --nodes (minimum and maximum) and --ntasks-per-node; 0 when unset.
	MinNodes, MaxNodes, NTasksPerNode uint32
	// HetJob is true for a component of a heterogeneous job.
	HetJob bool
}

// Core is the placement core's admission, built for one config and inventory.
// *admit.Admitter is the one used in Slurm.
type Core interface {
	// AdmitWith returns the job with every gpu:mem request replaced by native GRES,
	// leaving every other entry as it was, choosing among the forms that can serve it by
	// the usage view (nil: none). An error is a refusal: its text is what the user reads.
	AdmitWith(j admit.Job, use *admit.Usage) (admit.Decision, error)
}

// NewCore builds the Core; it is called again whenever the inventory changes.
// defaultPartitions serve jobs that name none.
type NewCore func(cfg config.Config, inv inventory.Cluster, defaultPartitions []string) (Core, error)

// AdmitCore is the NewCore of the real plugins.
func AdmitCore(cfg config.Config, inv inventory.Cluster, defaultPartitions []string) (Core, error) {
	pools := make([]admit.Pool, len(cfg.Pools))
	for i, p := range cfg.Pools {
		pools[i] = admit.Pool{Partition: p.Partition, MinMiB: p.MinMiB, MaxMiB: p.MaxMiB}
	}
	return admit.New(inv, defaultPartitions, admit.Options{
		ShardUnitMiB:   cfg.ShardUnitMiB,
		PreferMIG:      cfg.PreferMIG,
		Policy:         cfg.Policy,
		Pools:          pools,
		TargetSizesMiB: cfg.TargetSizesMiB,
	})
}

// Verdict is what the shim does with a job.
type Verdict struct {
	Fields  Fields // the fields to write back where they differ from the job's
	Refusal string // non-empty: refuse the job with this message
	// Fresh is how long the same verdict stays right for the same fields: until the
	// inventory is next looked at. Zero means decide again every time (an error, or a
	// log level that wants a line per job). The job_submit shim keeps verdicts this long
	// so that a burst of alike jobs does not enter the Go runtime for each one.
	Fresh time.Duration
}

// Plugin is one loaded plugin: it lives from Slurm's init() to fini().
type Plugin struct {
	cfg      config.Config
	log      logger
	newCore  NewCore
	src      source
	core     Core
	defParts []string // slurm.conf's default partition, for jobs that name none
	now      func() time.Time
	pins     *pinner // nil unless ShardTypes = per-gpu
	// het is, in a client, where the components of the heterogeneous job being decided
	// run so far: each takes nodes of its own (see admit.Job.HetSiblings).
	het [][]string
}

// New reads the configuration at confPath and the inventory it names. Every problem is
// logged and survived: a plugin that cannot admit jobs still loads and applies OnError.
func New(confPath, tag string, sink Sink, newCore NewCore) *Plugin {
	p := newPlugin(confPath, tag, sink, newCore, time.Now)
	p.startPinning()
	p.reload()
	return p
}

// NewClient is New for srun, sbatch and salloc: the inventory is read only when a
// command asks for GPU memory outside an allocation, so every other command, and every
// step, starts as fast as without gpumem.
func NewClient(confPath, tag string, sink Sink, newCore NewCore) *Plugin {
	return newPlugin(confPath, tag, sink, newCore, time.Now)
}

func newPlugin(confPath, tag string, sink Sink, newCore NewCore, now func() time.Time) *Plugin {
	cfg, err := config.Load(confPath)
	p := &Plugin{cfg: cfg, newCore: newCore, now: now,
		log: logger{sink: sink, level: cfg.LogLevel, tag: tag}}
	if err != nil {
		p.log.errorf("%v; using defaults for the keys in error", err)
	}
	p.src = source{path: cfg.InventoryPath, interval: cfg.ReloadInterval, load: inventory.LoadPath}
	if part, err := DefaultPartition(cfg.SlurmConf); err != nil {
		p.log.errorf("default partition: %v; jobs without --partition are admitted against every partition", err)
	} else if part != "" {
		p.defParts = []string{part}
	}
	p.log.infof("loaded: config %s, policy %s, shard unit %d MiB, on error %s, inventory %s, gpumem %s", confPath, cfg.Policy, cfg.ShardUnitMiB, cfg.OnError, cfg.InventoryPath, version.String())
	return p
}

// Config is the configuration in force.
func (p *Plugin) Config() config.Config { return p.cfg }

// reload takes a new inventory when the files changed; a broken one keeps the last good.
func (p *Plugin) reload() {
	c, err := p.src.refresh(p.now())
	if err != nil {
		if p.core != nil {
			p.log.errorf("%v; keeping the inventory loaded before", err)
		} else {
			p.log.errorf("%v; no inventory yet, gpu:mem jobs get OnError=%s", err, p.cfg.OnError)
		}
		return
	}
	if c == nil {
		return
	}
	core, err := p.newCore(p.cfg, *c, p.defParts)
	if err != nil {
		p.log.errorf("inventory %s: %v; keeping the inventory loaded before", p.cfg.InventoryPath, err)
		return
	}
	p.core = core
	p.log.infof("inventory %s: %d nodes", p.cfg.InventoryPath, len(c.Nodes))
}

// Submit decides one job (job_submit, job_modify, or a cli_filter submission). It never
// panics: a panic in the core is logged with its stack and handled as OnError says.
func (p *Plugin) Submit(f Fields) (v Verdict) {
	v, _ = p.decide(f, nil, false)
	return v
}

// decide is Submit for a job whose heterogeneous siblings, decided before it, may be on
// hosts sib; with hosts, it also returns the hosts of its own decision.
func (p *Plugin) decide(f Fields, sib [][]string, hosts bool) (v Verdict, own [][]string) {
	if !asksMem(f) {
		return Verdict{Fields: f}, nil
	}
	defer func() {
		if r := recover(); r != nil {
			p.log.errorf("internal error: %v\n%s", r, debug.Stack())
			v = p.failed(f, fmt.Errorf("internal error: %v", r))
		}
	}()
	p.reload()
	if p.core == nil {
		return p.failed(f, fmt.Errorf("no usable inventory at %s", p.cfg.InventoryPath)), nil
	}
	j := jobOf(f)
	j.HetSiblings = sib
	d, err := p.core.AdmitWith(j, p.usage())
	fresh := p.fresh()
	if d.Live {
		fresh = 0 // chosen by what runs now: the next alike job may go elsewhere
	}
	if err != nil {
		p.log.verbosef("refused %+v: %v", f, err)
		return Verdict{Fields: f, Refusal: err.Error(), Fresh: fresh}, nil
	}
	if !d.Changed {
		return Verdict{Fields: f, Fresh: fresh}, nil
	}
	out := f
	out.PerNode, out.PerJob, out.PerSocket, out.PerTask = d.TresPerNode, d.TresPerJob, d.TresPerSocket, d.TresPerTask
	if len(d.Partitions) > 0 {
		out.Partition = strings.Join(d.Partitions, ",")
	}
	p.log.verbosef("%s", d.Explain)
	if h, ok := p.core.(interface {
		Hosts(admit.Job, admit.Decision) [][]string
	}); ok && hosts {
		own = h.Hosts(j, d)
	}
	return Verdict{Fields: out, Fresh: fresh}, own
}

// fresh is how long a verdict from the core in use stays right: Admit depends only on
// the job's fields, the configuration and the inventory, and the inventory is not
// looked at again before the source's next check. An administrator who asked for a
// log line per job gets one, so then nothing is reused.
func (p *Plugin) fresh() time.Duration {
	if p.log.level >= config.LevelVerbose {
		return 0
	}
	return max(p.src.nextCheck().Sub(p.now()), 0)
}

// failed applies OnError when gpumem itself cannot decide.
func (p *Plugin) failed(f Fields, err error) Verdict {
	if p.cfg.OnError == config.Closed {
		p.log.errorf("%v; refusing the job (OnError=closed)", err)
		return Verdict{Fields: f, Refusal: "gpumem cannot place GPU memory requests right now (" + err.Error() + "); please try again later or tell your administrator"}
	}
	p.log.errorf("%v; passing the job through unchanged (OnError=open)", err)
	return Verdict{Fields: f}
}

// asksMem is the fast path: a job whose GRES strings hold no "mem" in any case cannot
// ask for GPU memory, and is passed on without touching the core. It may say yes to
// jobs that ask for something else; the core then leaves them unchanged.
func asksMem(f Fields) bool {
	return hasMem(f.PerNode) || hasMem(f.PerJob) || hasMem(f.PerSocket) || hasMem(f.PerTask)
}

func hasMem(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i]|0x20 == 'm' && s[i+1]|0x20 == 'e' && s[i+2]|0x20 == 'm' {
			return true
		}
	}
	return false
}
