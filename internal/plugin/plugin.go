// Package plugin is the Go logic behind the job_submit/gpumem and cli_filter/gpumem Slurm
// plugins: cached configuration and inventory, the call into the placement core, what to
// do when gpumem itself fails, and logging. It has no cgo, so it is tested without Slurm;
// the C shims in cgo/ only move strings between Slurm's structures and this package.
package plugin

import (
	"errors"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpumem/gpumem/internal/admit"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/refusalcount"
	"github.com/gpumem/gpumem/internal/request"
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
	// --nodes (minimum and maximum), --ntasks-per-node and --ntasks; 0 when unset.
	MinNodes, MaxNodes, NTasksPerNode, NTasks uint32
	// The options that count GPUs as Slurm does (see admit.Job.GPUsOnly): --exclusive
	// (any form that holds whole nodes), and --mem-per-gpu, --cpus-per-gpu, --gpu-freq
	// as Slurm holds them (TRES strings such as gres:gpu:2048, gpu:medium; only a
	// gpu entry counts) and --ntasks-per-gpu (0: unset). Read only.
	Exclusive                         bool
	MemPerTRES, CPUsPerTRES, TRESFreq string
	NTasksPerTRES                     uint32
	// HetJob is true for a component of a heterogeneous job; HetOffset is its place in
	// the job (job_submit only: cli_filter's offset travels in Options).
	HetJob    bool
	HetOffset uint32
	// Caller is job_submit's: the slurmctld thread that submits the job (0: unknown).
	// slurmctld checks a heterogeneous job's components one after the other on one
	// thread (hetcalls.go).
	Caller int64
	// Keep is job_modify's: the native GRES a pending job holds, when Slurm refuses to
	// change its GRES name (see admit.Job.Keep).
	Keep string
	// Script is job_submit's batch script (its first MaxScriptRead bytes and one more),
	// passed only when the shim's prefilter says it may give --gres twice or, for a
	// gpu:mem job, has a longer #SBATCH head; read for that alone (ScriptRepeats).
	Script string
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
		ShardUnitMiB:    cfg.ShardUnitMiB,
		PreferMIG:       cfg.PreferMIG,
		PlacementPolicy: cfg.PlacementPolicy,
		Pools:           pools,
		TargetSizesMiB:  cfg.TargetSizesMiB,
		Fence:           string(cfg.Fence),
	})
}

// Verdict is what the shim does with a job.
type Verdict struct {
	Fields  Fields // the fields to write back where they differ from the job's
	Refusal string // non-empty: refuse the job with this message
	// Fresh is how long the same verdict stays right for the same fields: until the
	// inventory is next looked at. Zero means decide again every time (an error, a
	// refusal, which is counted each time, or a log level that wants a line per job). The job_submit shim keeps verdicts this long
	// so that a burst of alike jobs does not enter the Go runtime for each one.
	Fresh time.Duration

	why refusalcount.Class // with a Refusal: its class, for the refusal counts
}

// Plugin is one loaded plugin: it lives from Slurm's init() to fini(). Every method is
// safe under any number of concurrent calls: slurmctld (from 23.02) calls job_submit from
// several threads at once. Decisions read one published state (see state); pins have a
// mutex of their own.
type Plugin struct {
	confPath string
	client   bool // cli_filter: no loader goroutine, no pinning; reads files itself when asked
	log      *logger
	newCore  NewCore
	now      func() time.Time

	st     atomic.Pointer[state]
	loadMu sync.Mutex       // one reload at a time
	inv    inventory.Reader // guarded by loadMu
	pins   pinner

	stop, done chan struct{} // the loader's

	// refused counts job_submit's refusals on the submit path (an atomic add); the
	// loader writes them to RefusalCounts (see writeRefused) from started on.
	refused refusalcount.Counter
	started time.Time
	written refusedWrite // the loader's only

	// het is, in a client, where the components of the heterogeneous job being decided
	// run so far: each takes nodes of its own (see admit.Job.HetSiblings).
	hetMu sync.Mutex
	het   [][]string
	// hetCalls is job_submit's: the same, for each slurmctld thread submitting one.
	hetCalls hetCalls
	// resv is job_submit's last look at Slurm's reservations (reservation.go); nil
	// before the first. resvSrc is where they come from (nil: nowhere), set once before
	// any decision.
	resv    atomic.Pointer[reservations]
	resvSrc ReservationSource
}

// firstLoadWait bounds how long init waits for the first look at the files: a hung
// filesystem must not stop slurmctld from starting. Until the first look ends, gpu:mem
// jobs are refused with "try again later".
const firstLoadWait = 5 * time.Second

// New starts job_submit's plugin: the configuration at confPath, the inventory and
// everything else it names are read by a loader goroutine, now and then every
// ReloadInterval, until Close. Every problem is logged and survived.
func New(confPath, tag string, sink Sink, newCore NewCore) *Plugin {
	p := newPlugin(confPath, tag, sink, newCore, time.Now, false)
	p.startLoader()
	deadline := time.Now().Add(firstLoadWait)
	for p.st.Load().next.IsZero() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if p.st.Load().next.IsZero() {
		p.log.errorf("the first look at the configuration and inventory takes more than %s (a hung filesystem?); gpu:mem jobs are refused until it ends", firstLoadWait)
	}
	return p
}

// NewClient is New for srun, sbatch and salloc: files are read only when a command asks
// for GPU memory outside an allocation, so every other command, and every step, starts as
// fast as without gpumem. A client makes one decision and exits, so it reads in place.
func NewClient(confPath, tag string, sink Sink, newCore NewCore) *Plugin {
	return newPlugin(confPath, tag, sink, newCore, time.Now, true)
}

// newPlugin makes a plugin with an empty state: nothing read yet.
func newPlugin(confPath, tag string, sink Sink, newCore NewCore, now func() time.Time, client bool) *Plugin {
	p := &Plugin{confPath: confPath, client: client, newCore: newCore, now: now, started: now(),
		log: &logger{sink: sink, tag: tag, client: client}}
	p.log.setLevel(config.LevelInfo)
	p.st.Store(&state{cfg: config.Default()})
	return p
}

// Config is the configuration in force.
func (p *Plugin) Config() config.Config { return p.current(false).cfg }

// current is the state to decide on. A client reads its files first (only gpumem.conf
// unless full), which is the one place a file is read on the way to a decision.
func (p *Plugin) current(full bool) *state {
	if p.client {
		p.loadMu.Lock()
		p.load(full)
		p.loadMu.Unlock()
	}
	return p.st.Load()
}

// Submit decides one job (job_submit, job_modify, or a cli_filter submission). It never
// panics and never blocks on a file: it reads the published state only.
func (p *Plugin) Submit(f Fields) Verdict {
	if p.followsHet(f) {
		return p.counted(p.submitHet(f))
	}
	return p.counted(p.submit(f))
}

// counted counts v when it refuses a job in job_submit. A refusal is then never reused
// by the shim (Fresh 0), so that each refused submission comes here and is counted:
// refusals are few, and the memo is for bursts of alike jobs that pass.
func (p *Plugin) counted(v Verdict) Verdict {
	if v.Refusal != "" && !p.client {
		p.refused.Add(v.why)
		v.Fresh = 0
	}
	return v
}

// submit is Submit without counting a refusal (job_modify's use).
func (p *Plugin) submit(f Fields) Verdict {
	v, _ := p.submitAfter(f, nil, false)
	return v
}

// submitAfter is submit for a job whose heterogeneous siblings, decided before it, may
// be on hosts sib; with hosts, it also returns the hosts of its own decision.
func (p *Plugin) submitAfter(f Fields, sib [][]string, hosts bool) (Verdict, [][]string) {
	if r := f.scriptRefusal(); r != "" {
		return Verdict{Fields: f, Refusal: r, why: refusalcount.Invalid}, nil
	}
	if !AsksMem(f) {
		return Verdict{Fields: f}, nil
	}
	return p.decide(p.current(true), f, sib, hosts)
}

// decide is Submit on the state st for a job whose heterogeneous siblings, decided
// before it, may be on hosts sib; with hosts, it also returns the hosts of its own
// decision.
func (p *Plugin) decide(st *state, f Fields, sib [][]string, hosts bool) (v Verdict, own [][]string) {
	defer func() {
		if r := recover(); r != nil {
			p.log.errorf("internal error: %v\n%s", r, debug.Stack())
			v, own = p.failed(st, f, refusal.Internal(r)), nil
		}
	}()
	if p.client && st.cfgErr != nil {
		return p.failed(st, f, st.cfgErr), nil
	}
	if st.core == nil {
		why := st.invErr
		if why == nil {
			why = refusal.NotLoaded(st.cfg.InventoryPath)
		}
		return p.failed(st, f, why), nil
	}
	j := jobOf(f)
	j.HetSiblings = sib
	core := st.core
	fresh := st.fresh(p.now())
	resv, inResv := p.within(st, f.Reservation)
	if resv != nil {
		core, fresh = resv, 0 // the reservation may change before the inventory does
	}
	var d admit.Decision
	var err error
	p.pins.withUsage(st, p.now(), func(use *admit.Usage) { d, err = core.AdmitWith(j, use) })
	if d.Live {
		fresh = 0 // chosen by what runs now: the next alike job may go elsewhere
	}
	if err != nil {
		p.log.verbosef("refused %+v: %v", f, err)
		why := refusalcount.Invalid
		if errors.Is(err, admit.ErrNoFit) {
			why = refusalcount.NoFit
		}
		return Verdict{Fields: f, Refusal: err.Error() + inResv, Fresh: fresh, why: why}, nil
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
	if h, ok := core.(interface {
		Hosts(admit.Job, admit.Decision) [][]string
	}); ok && hosts {
		own = h.Hosts(j, d)
	}
	return Verdict{Fields: out, Fresh: fresh}, own
}

// failed is what happens when gpumem itself cannot decide a gpu:mem job (no inventory
// yet, an internal error, or in a client a broken gpumem.conf). A gpu:mem request Slurm
// receives untranslated can never run, so job_submit refuses the job with a "try again"
// message whatever OnError says. OnError is for the client: open leaves the options as
// typed for job_submit, the authority, to translate; closed stops the command.
func (p *Plugin) failed(st *state, f Fields, err error) Verdict {
	v := Verdict{Fields: f, Refusal: refusal.Unavailable(err.Error()), why: refusalcount.Unavailable}
	if p.client {
		if st.cfg.OnError == config.Open {
			p.log.debugf("%v; leaving the request to slurmctld (OnError=open)", err)
			return Verdict{Fields: f}
		}
		return v
	}
	p.log.errorf("%v; refusing the gpu:mem job, the user is told to try again", err)
	return v
}

// AsksMem says whether the job asks for GPU memory, by the one rule the core also
// decides by (request.AsksMem): a job without a gpu:mem entry is never gpumem's to
// translate or refuse, not even while gpumem cannot decide jobs (failed).
func AsksMem(f Fields) bool {
	return request.AsksMem(f.PerNode, f.PerJob, f.PerSocket, f.PerTask)
}
