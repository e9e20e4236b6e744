package plugin

import (
	"runtime/debug"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/clip"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/slurmconf"
)

// A job with --reservation runs only on the reservation's nodes, so it is admitted
// against those: a core built for the inventory narrowed to them. Slurm alone knows its
// reservations; job_submit asks (ReservationSource) in a goroutine of its own, every
// reservationPeriod, and a submit reads only what was last published (a reservation
// made since is admitted against its partitions, as before). A client, which decides
// once and exits, asks when its job names one.

// reservationPeriod is how often job_submit looks at the reservations, at the most.
const reservationPeriod = 10 * time.Second

// maxReservations bounds what one look keeps.
const maxReservations = 4096

// resvCore is one reservation's nodes and the core built for them on one inventory.
type resvCore struct {
	nodes   string // the host list, as scontrol prints it
	cluster *inventory.Cluster
	core    Core
}

// reservations is one published look: a core per reservation, by name.
type reservations map[string]resvCore

// ReservationSource lists Slurm's reservations that have nodes: each one's host list,
// by name. The shims ask libslurm (cgo/shim.Reservations); it may block, for as long as
// Slurm's own message timeout.
type ReservationSource func() (map[string]string, error)

// ParseReservations reads the "NAME\tNODES" lines the shims' reservation list is made
// of. Names and lists are the administrator's; a line without both is skipped, and so
// is one of every node ("ALL"), which narrows nothing.
func ParseReservations(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		name, nodes, ok := strings.Cut(line, "\t")
		if ok && name != "" && nodes != "" && nodes != "ALL" && len(m) < maxReservations {
			m[name] = nodes
		}
	}
	return m
}

// UseReservations sets where the reservations come from, once, before any decision; in
// job_submit it starts the goroutine that looks at them.
func (p *Plugin) UseReservations(src ReservationSource) {
	p.resvSrc = src
	if !p.client && src != nil && p.stop != nil {
		go p.watchReservations()
	}
}

// narrowed builds the cores for the reservations named in nodes on st's inventory,
// reusing those of was that are for the same nodes and inventory.
func (p *Plugin) narrowed(st *state, nodes map[string]string, was reservations) reservations {
	out := make(reservations, len(nodes))
	if st.cluster == nil {
		return out
	}
	for name, list := range nodes {
		if rc, ok := was[name]; ok && rc.nodes == list && rc.cluster == st.cluster {
			out[name] = rc
			continue
		}
		core, err := p.coreWithin(st, list)
		if err != nil {
			p.log.errorf("reservation %s (%s): %v; its jobs are admitted against their partitions", name, clip.String(list, clip.List), err)
			continue
		}
		out[name] = resvCore{nodes: list, cluster: st.cluster, core: core}
	}
	return out
}

// coreWithin is a core for st's inventory narrowed to the nodes of host list list.
// Pools whose partition has no node there are dropped: they route nothing in it. The
// list is read against the inventory's nodes, not expanded: nodes it names that the
// inventory lacks cost nothing.
func (p *Plugin) coreWithin(st *state, list string) (Core, error) {
	h, err := slurmconf.ParseHostlist(list)
	if err != nil {
		return nil, err
	}
	all := make([]string, len(st.cluster.Nodes))
	for i, n := range st.cluster.Nodes {
		all[i] = n.Name
	}
	in := map[string]bool{}
	for _, n := range slurmconf.NewNodeSet(all).Covered(h) {
		in[n] = true
	}
	var c inventory.Cluster
	for _, n := range st.cluster.Nodes {
		if in[n.Name] {
			c.Nodes = append(c.Nodes, n)
		}
	}
	cfg := st.cfg
	core, err := p.newCore(cfg, c, st.defParts)
	if err != nil && len(cfg.Pools) > 0 {
		cfg.Pools = nil
		core, err = p.newCore(cfg, c, st.defParts)
	}
	return core, err
}

// watchReservations is job_submit's look at the reservations, until Close.
func (p *Plugin) watchReservations() {
	p.every(p.lookAtReservations, func() time.Duration { return max(p.current(false).cfg.ReloadInterval, reservationPeriod) })
}

func (p *Plugin) lookAtReservations() {
	defer func() {
		if r := recover(); r != nil {
			p.log.errorf("reservations: internal error: %v\n%s", r, debug.Stack())
		}
	}()
	nodes, err := p.resvSrc()
	if err != nil {
		p.log.verbosef("reservations: %v; keeping the last look", err)
		return
	}
	was := p.resv.Load()
	var prev reservations
	if was != nil {
		prev = *was
	}
	next := p.narrowed(p.st.Load(), nodes, prev)
	p.resv.Store(&next)
}

// within is the core a job of reservation name is admitted against, and words naming
// it for a refusal; nil when the reservation is not known (or there is none).
func (p *Plugin) within(st *state, name string) (Core, string) {
	if name == "" {
		return nil, ""
	}
	var rs reservations
	if p.client && p.resvSrc != nil {
		nodes, err := p.resvSrc()
		if err != nil {
			p.log.debugf("reservation %s: %v; admitted against its partitions", name, err)
			return nil, ""
		}
		list, ok := nodes[name]
		if !ok {
			return nil, ""
		}
		rs = p.narrowed(st, map[string]string{name: list}, nil)
	} else if r := p.resv.Load(); r != nil {
		rs = *r
	}
	rc, ok := rs[name]
	if !ok || rc.cluster != st.cluster {
		return nil, ""
	}
	return rc.core, refusal.InReservation(name, rc.nodes)
}
