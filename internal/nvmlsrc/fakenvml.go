package nvmlsrc

import (
	"fmt"
	"time"

	"github.com/gpumem/gpumem/internal/mig"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

const fakeDriver = "550.54.15"

// OpenFake opens the fake node described by the file at path.
func OpenFake(spec, path string) (*Source, error) {
	n, err := LoadFake(path)
	if err != nil {
		return nil, err
	}
	configs := make([]gpus.Config, len(n.GPUs))
	for i, g := range n.GPUs {
		cfg := FakeModels[g.Model]
		if g.Name != "" {
			cfg.Name = g.Name
		}
		if g.MemoryMiB != 0 {
			cfg.MemoryMB = g.MemoryMiB
		}
		configs[i] = cfg
	}
	driver := n.Driver
	if driver == "" {
		driver = fakeDriver
	}
	srv := server.NewServerWithGPUs(driver, "12."+driver, 12040, configs...)
	if err := Guard(func() error { return n.attach(srv, "fa4e") }); err != nil {
		return nil, fmt.Errorf("fake node %s: %w", path, err)
	}
	return &Source{NVML: srv, Kind: KindFake, Spec: spec, CapsMinors: DriverMigMinors, Fake: n, shutdown: srv.Shutdown}, nil
}

// attach wires a go-nvml mock server to n: what the mock leaves unset (affinity,
// processes, temperature, power, utilisation, events) answers from n, and n's MIG
// layout is created through the mock's own NVML calls.
func (n *FakeNode) attach(srv *server.Server, uuidTag string) error {
	if len(srv.Devices) != len(n.GPUs) {
		return fmt.Errorf("%d GPUs described for a server of %d", len(n.GPUs), len(srv.Devices))
	}
	for i, dev := range srv.Devices {
		d := dev.(*server.Device)
		g := &n.GPUs[i]
		d.UUID = g.UUID
		if d.UUID == "" {
			// Stable across runs, so an unchanged node renders an unchanged inventory.
			d.UUID = fmt.Sprintf("GPU-%s0000-0000-4000-8000-%012x", uuidTag, i)
		}
		if g.Minor != nil {
			d.Minor = *g.Minor
		}
		n.wireDevice(d, i)
		if err := n.createMIG(d, i); err != nil {
			return fmt.Errorf("gpu %d: %w", i, err)
		}
	}
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return n.newEventSet(), nvml.SUCCESS
	}
	n.wireLimits(srv)
	return nil
}

// live runs f on GPU i's live state, freshly re-read, or answers GPU_IS_LOST.
func (n *FakeNode) live(i int, f func(g *FakeGPU)) nvml.Return {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refresh()
	if n.GPUs[i].Lost {
		return nvml.ERROR_GPU_IS_LOST
	}
	f(&n.GPUs[i])
	return nvml.SUCCESS
}

func (n *FakeNode) wireDevice(d *server.Device, i int) {
	// Real NVML gives a new GPU instance the lowest id free on its GPU, and the mock a
	// counter that only grows: a repartitioned fake GPU would get ids (and so
	// /dev/nvidia-caps files) no real one has.
	create := d.CreateGpuInstanceWithPlacementFunc
	d.CreateGpuInstanceWithPlacementFunc = func(info *nvml.GpuInstanceProfileInfo, pl *nvml.GpuInstancePlacement) (nvml.GpuInstance, nvml.Return) {
		d.Lock()
		d.GpuInstanceCounter = n.nextGI(d)
		d.Unlock()
		return create(info, pl)
	}
	cores := n.GPUs[i].Cores
	d.GetCpuAffinityFunc = func(numCPUs int) ([]uint, nvml.Return) {
		if cores == "" {
			return nil, nvml.ERROR_NOT_SUPPORTED
		}
		if numCPUs <= 0 {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		cpus, _ := ParseCPUList(cores) // checked when the file was loaded
		// As many words as go-nvml's real binding allocates for numCPUs.
		return cpuMask(cpus, (numCPUs-1)/8+1), nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		var out []nvml.ProcessInfo
		ret := n.live(i, func(g *FakeGPU) {
			for _, p := range g.Processes {
				out = append(out, nvml.ProcessInfo{Pid: p.PID, UsedGpuMemory: p.UsedMiB << 20,
					GpuInstanceId: optID(p.GI), ComputeInstanceId: optID(p.CI)})
			}
		})
		return out, ret
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		m := d.MemoryInfo
		ret := n.live(i, func(g *FakeGPU) {
			m.Used = 0
			for _, p := range g.Processes {
				m.Used += p.UsedMiB << 20
			}
			m.Used = min(m.Used, m.Total)
			m.Free = m.Total - m.Used
		})
		return m, ret
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		var t uint32
		return t, n.live(i, func(g *FakeGPU) { t = g.TemperatureC })
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		var p uint32
		return p, n.live(i, func(g *FakeGPU) { p = g.PowerMW })
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		var u nvml.Utilization
		return u, n.live(i, func(g *FakeGPU) { u = nvml.Utilization{Gpu: g.UtilGPU, Memory: g.UtilMemory} })
	}
	d.GetMigModeFunc = func() (int, int, nvml.Return) {
		d.RLock()
		cur := d.MigMode
		d.RUnlock()
		pending := cur
		if m := n.GPUs[i].MIG; m != nil && m.Pending != nil {
			pending = boolMode(*m.Pending)
		}
		return cur, pending, nvml.SUCCESS
	}
	d.RegisterEventsFunc = func(types uint64, set nvml.EventSet) nvml.Return {
		es, ok := set.(*fakeEventSet)
		if !ok {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		if types&nvml.EventTypeXidCriticalError != 0 {
			es.devs[i] = d
		}
		return nvml.SUCCESS
	}
}

func (n *FakeNode) createMIG(d *server.Device, i int) error {
	m := n.GPUs[i].MIG
	if m == nil || !m.Enabled {
		return nil
	}
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	want := make(mig.Layout, len(m.Instances))
	for k, in := range m.Instances {
		want[k] = mig.Placement{Profile: in.Profile, Start: in.Start}
	}
	plan, err := resolveLayout(d, want)
	if err != nil {
		return err
	}
	ids := map[int]bool{}
	for k, r := range plan {
		if gi := m.Instances[k].GI; gi != nil {
			if *gi < 0 || *gi >= capsGIsPerGPU || ids[*gi] {
				return fmt.Errorf("MIG %s: gi %d: want a distinct id 0-%d", r.profile.Name, *gi, capsGIsPerGPU-1)
			}
			ids[*gi] = true
		}
		n.fixedGI = m.Instances[k].GI
		_, err := CreateInstance(d, r.profile, r.placement)
		n.fixedGI = nil
		if err != nil {
			return err
		}
	}
	return nil
}

// nextGI is the id the next GPU instance on d gets: the one the node file fixes while
// the file's layout is made, else the lowest id free. The caller holds d's lock.
func (n *FakeNode) nextGI(d *server.Device) uint32 {
	if n.fixedGI != nil {
		return uint32(*n.fixedGI)
	}
	used := map[uint32]bool{}
	for gi := range d.GpuInstances {
		used[gi.Info.Id] = true
	}
	var id uint32
	for used[id] {
		id++
	}
	return id
}

// CreateInstance creates a GPU instance of profile p at pl with one compute instance
// spanning it, the layout Slurm expects.
func CreateInstance(d nvml.Device, p GIProfile, pl nvml.GpuInstancePlacement) (nvml.GpuInstance, error) {
	var gi nvml.GpuInstance
	var ret nvml.Return
	if err := Guard(func() error { gi, ret = d.CreateGpuInstanceWithPlacement(&p.Info, &pl); return nil }); err != nil {
		return nil, err
	}
	if err := Err(ret, fmt.Sprintf("create GPU instance %s at slot %d", p.Name, pl.Start)); err != nil {
		return nil, err
	}
	ci, err := FullComputeProfile(gi, p.Info.SliceCount)
	if err != nil {
		return gi, fmt.Errorf("MIG %s: %w", p.Name, err)
	}
	if err := Guard(func() error { _, ret = gi.CreateComputeInstance(&ci); return nil }); err != nil {
		return gi, err
	}
	return gi, Err(ret, "create compute instance in "+p.Name)
}

func profileNames(ps []GIProfile) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += p.Name
	}
	return s
}

func optID(p *int) uint32 {
	if p == nil {
		return 0xFFFFFFFF // what NVML reports outside MIG
	}
	return uint32(*p)
}

func boolMode(b bool) int {
	if b {
		return nvml.DEVICE_MIG_ENABLE
	}
	return nvml.DEVICE_MIG_DISABLE
}

// fakeEventSet delivers each GPU's queued XIDs once, in order.
type fakeEventSet struct {
	mock.EventSet
	devs map[int]nvml.Device
}

const eventPoll = 50 * time.Millisecond

func (n *FakeNode) newEventSet() *fakeEventSet {
	es := &fakeEventSet{devs: map[int]nvml.Device{}}
	es.FreeFunc = func() nvml.Return { return nvml.SUCCESS }
	es.WaitFunc = func(timeoutMs uint32) (nvml.EventData, nvml.Return) {
		deadline := time.Now().Add(time.Duration(timeoutMs) * time.Millisecond)
		for {
			if ev, ok := n.nextXID(es); ok {
				return ev, nvml.SUCCESS
			}
			left := time.Until(deadline)
			if left <= 0 {
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			time.Sleep(min(left, eventPoll))
		}
	}
	return es
}

func (n *FakeNode) nextXID(es *fakeEventSet) (nvml.EventData, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refresh()
	for i := range n.GPUs {
		d, ok := es.devs[i]
		g := &n.GPUs[i]
		if !ok || g.xidsSent >= len(g.XIDs) {
			continue
		}
		x := g.XIDs[g.xidsSent]
		g.xidsSent++
		return nvml.EventData{Device: d, EventType: nvml.EventTypeXidCriticalError, EventData: uint64(x.XID),
			GpuInstanceId: optID(x.GI), ComputeInstanceId: optID(x.CI)}, true
	}
	return nvml.EventData{}, false
}
