package plugin

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/steer"
	"github.com/gpumem/gpumem/internal/version"
)

// state is everything a decision reads, loaded and indexed off the submit path and
// published whole (Plugin.st). A state is never changed once published: a submit loads
// the pointer once and decides on one consistent view, however many threads slurmctld
// calls job_submit from, while the loader builds the next one. The one exception is
// pin.work, which the loader builds and hands to the pinner; from then only the pinner,
// under its own mutex, touches it.
type state struct {
	cfg    config.Config
	cfgErr error // why gpumem.conf could not be read as written; nil when it could

	cluster  *inventory.Cluster // the last good inventory; nil when none ever was
	core     Core               // built for cluster; nil when there is none
	invErr   error              // why there is no core, while core is nil
	defParts []string           // slurm.conf's default partition, for jobs that name none
	types    map[string]map[string]bool

	// usage is the decoded usage snapshot gpumemctl steer writes (what runs on each GPU),
	// nil when there is none or it is unusable (usageErr says why). Pinning reads it; it
	// is also the free/usage view admission can be given.
	usage    *steer.Snapshot
	usageErr error
	pin      *pinBase // nil unless pinning is on and there is a cluster and a usage snapshot
	pinErr   error    // why pinning is off in gpumem.conf (a bad PinPolicy), else nil

	sig  sigs      // what the files looked like when last read
	next time.Time // when the loader looks at the files again
}

// sigs are the signatures (see signature) of the files a state was read from.
type sigs struct{ conf, slurm, inv, usage, invPath string }

// Usage is the current decoded usage snapshot, or nil.
func (s *state) Usage() *steer.Snapshot { return s.usage }

// fresh is how long a verdict from this state stays right: Admit depends only on the
// job's fields and the state, and the state is not replaced before the loader's next
// look. An administrator who asked for a log line per job gets one, so then nothing is
// reused.
func (s *state) fresh(now time.Time) time.Duration {
	if s.cfg.LogLevel >= config.LevelVerbose || s.core == nil {
		return 0
	}
	return max(s.next.Sub(now), 0)
}

// minLoaderPeriod keeps a ReloadInterval of 0 ("look before every decision", for tests
// and labs) from spinning the background loader.
const minLoaderPeriod = 100 * time.Millisecond

// startLoader runs reload in one goroutine until Close: every file gpumem reads is
// looked at there, never on the submit path, so a hung filesystem stalls only the loader
// (submits go on with the last state). slurmctld has forked slurmscriptd before it loads
// job_submit plugins, so this goroutine never meets a fork; a panic in it is logged and
// the loader goes on, since nothing outside could recover it.
func (p *Plugin) startLoader() {
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		p.every(p.safeReload, func() time.Duration { return max(time.Until(p.st.Load().next), minLoaderPeriod) })
	}()
}

// every runs f now, and again wait() after each run, until Close.
func (p *Plugin) every(f func(), wait func() time.Duration) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		f()
		t.Reset(wait())
	}
}

func (p *Plugin) safeReload() {
	defer func() {
		if r := recover(); r != nil {
			p.log.errorf("loader: internal error: %v\n%s", r, debug.Stack())
		}
	}()
	p.reload()
	p.writeRefused()
}

// Close stops the loader (Slurm's fini). A loader stuck in a hung filesystem is left
// behind after a short wait rather than hanging slurmctld's shutdown.
func (p *Plugin) Close() {
	if p.stop == nil {
		return
	}
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		p.log.errorf("loader still busy (a hung filesystem?); leaving it")
	}
}

// reload looks at every file once it is due (ReloadInterval after the last look), reads
// what changed, and publishes the new state. Only the loader calls it in slurmctld.
func (p *Plugin) reload() {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if old := p.st.Load(); !old.next.IsZero() && p.now().Before(old.next) {
		return
	}
	p.load(true)
}

// load reads what changed since the published state and publishes the result; with full
// false only gpumem.conf (a client's step needs no inventory). loadMu is held.
func (p *Plugin) load(full bool) {
	old := p.st.Load()
	now := p.now()
	s := *old
	first := old.next.IsZero() && old.sig.conf == ""

	confChanged := first
	if sig := sigOf(p.confPath); sig != s.sig.conf {
		s.sig.conf, confChanged = sig, true
		cfg, err := config.Load(p.confPath)
		switch {
		case err == nil:
			s.cfg, s.cfgErr = cfg, nil
		case first:
			s.cfg, s.cfgErr = cfg, err
			p.log.adminf("%v; using defaults for the keys in error", err)
		default:
			s.cfgErr = err
			p.log.adminf("%v; keeping the configuration loaded before", err)
		}
		p.log.setLevel(s.cfg.LogLevel)
		if first {
			p.log.infof("loaded: config %s, policy %s, shard unit %d MiB, inventory %s, gpumem %s", p.confPath, s.cfg.PlacementPolicy, s.cfg.ShardUnitMiB, s.cfg.InventoryPath, version.String())
		} else if err == nil {
			p.log.infof("configuration %s reloaded", p.confPath)
		}
	}
	cfg := s.cfg
	if !full {
		p.st.Store(&s)
		return
	}

	slurmChanged := confChanged
	if sig := sigOf(cfg.SlurmConf); sig != s.sig.slurm || confChanged {
		s.sig.slurm, slurmChanged = sig, true
		s.defParts = nil
		if part, err := DefaultPartition(cfg.SlurmConf); err != nil {
			p.log.adminf("default partition: %v; jobs without --partition are admitted against every partition", err)
		} else if part != "" {
			s.defParts = []string{part}
		}
		s.types = nil
		if p.pinning(cfg) {
			var err error
			if s.types, err = shardTypes(cfg.SlurmConf); err != nil {
				p.log.errorf("slurm.conf %s: %v; shard types are not checked before pinning", cfg.SlurmConf, err)
			}
		}
	}

	invChanged := false
	if sig := sigOf(cfg.InventoryPath); sig != s.sig.inv || cfg.InventoryPath != s.sig.invPath {
		s.sig.inv, s.sig.invPath, invChanged = sig, cfg.InventoryPath, true
		c, err := p.readInventory(cfg.InventoryPath)
		if err != nil {
			if s.cluster != nil && cfg.InventoryPath == old.sig.invPath {
				p.log.adminf("%v; keeping the inventory loaded before", err)
				invChanged = false
			} else {
				p.log.adminf("%v; no inventory yet: gpu:mem jobs are refused until there is one", err)
				s.cluster, s.core, s.invErr = nil, nil, err
			}
		} else {
			s.cluster = c
		}
	}
	if s.cluster != nil && (invChanged || slurmChanged || s.core == nil) {
		core, err := p.newCore(cfg, *s.cluster, s.defParts)
		switch {
		case err == nil:
			s.core, s.invErr = core, nil
			p.log.infof("inventory %s: %d nodes", cfg.InventoryPath, len(s.cluster.Nodes))
		case s.core != nil:
			p.log.adminf("inventory %s: %v; keeping the inventory loaded before", cfg.InventoryPath, err)
			s.cluster = old.cluster
		default:
			p.log.adminf("inventory %s: %v; gpu:mem jobs are refused until it is fixed", cfg.InventoryPath, err)
			s.cluster, s.invErr = nil, fmt.Errorf("inventory %s: %w", cfg.InventoryPath, err)
		}
	}

	usageChanged := false
	if p.pinning(cfg) {
		if sig := sigOf(cfg.UsageSnapshot); sig != s.sig.usage || confChanged {
			s.sig.usage, usageChanged = sig, true
			s.usage, s.usageErr = readUsage(cfg.UsageSnapshot)
			if s.usageErr != nil && !errors.Is(s.usageErr, os.ErrNotExist) {
				p.log.errorf("%v", s.usageErr)
			}
		}
	} else {
		s.usage, s.usageErr, s.sig.usage = nil, nil, ""
	}
	if confChanged || invChanged || slurmChanged || usageChanged {
		s.pin, s.pinErr = nil, nil
		if p.pinning(cfg) {
			s.pin, s.pinErr = newPinBase(cfg, s.core, s.cluster, s.usage, s.types, s.defParts, p.pins.recent())
			if s.pinErr != nil && (confChanged || first) {
				p.log.errorf("%v; shard jobs are not pinned", s.pinErr)
			}
		}
	}
	s.next = now.Add(cfg.ReloadInterval)
	if s.core == nil {
		s.next = now // nothing to decide with: look again at the loader's next turn
	}
	p.st.Store(&s)
}

// pinning is whether this plugin pins shard jobs under cfg: job_submit only, never a
// client, and only with ShardTypes = per-gpu.
func (p *Plugin) pinning(cfg config.Config) bool {
	return !p.client && cfg.ShardTypes == config.ShardTypesPerGPU
}

// readInventory reads the inventory; a node file that is too big, broken or duplicated
// is logged and costs only its nodes.
func (p *Plugin) readInventory(path string) (*inventory.Cluster, error) {
	c, skipped, err := p.inv.Read(path)
	if err != nil {
		return nil, fmt.Errorf("inventory %s: %w", path, err)
	}
	for _, s := range skipped {
		p.log.adminf("inventory: %v; skipped, the rest is used", s)
	}
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("inventory %s: no nodes", path)
	}
	return &c, nil
}

// readUsage reads and decodes the usage snapshot. A missing file is os.ErrNotExist
// (steering is not running yet), which is not logged.
func readUsage(path string) (*steer.Snapshot, error) {
	b, err := atomicfile.ReadCapped(path, maxUsageBytes)
	if err == nil {
		var s steer.Snapshot
		if s, err = steer.DecodeSnapshot(b); err == nil {
			return &s, nil
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return nil, fmt.Errorf("usage snapshot %s: %w; shard jobs are not pinned until it is good", path, err)
}

// maxUsageBytes caps the usage snapshot: a few dozen bytes per GPU, so 64 MiB is far
// beyond any cluster, and a bigger file is not one gpumemctl steer wrote.
const maxUsageBytes = 64 << 20

// sigOf is signature, with an error folded into the signature so that a file that
// vanishes or cannot be read also counts as a change.
func sigOf(path string) string {
	sig, err := signature(path)
	if err != nil {
		return "error: " + err.Error()
	}
	return sig
}

// signature summarises name, size and modification time of a file, or of every *.json in
// a directory: a node rewritten in place changes its file's time, one added or removed
// changes the list.
func signature(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return stamp(fi), nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fi, err := os.Stat(path + "/" + n)
		if errors.Is(err, os.ErrNotExist) {
			continue // renamed away while we looked; the next look sees the new list
		}
		if err != nil {
			return "", err
		}
		b.WriteString(n)
		b.WriteString(stamp(fi))
	}
	return b.String(), nil
}

func stamp(fi os.FileInfo) string {
	return fmt.Sprintf("|%d|%d;", fi.Size(), fi.ModTime().UnixNano())
}
