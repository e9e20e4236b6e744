package fence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpumem/gpumem/internal/inventory"
)

const unit = 1024 // MiB per shard

// node is two 80 GiB GPUs that hold the driver fence, one 40 GiB GPU in MIG mode and
// one GPU that holds none.
var node = []inventory.GPU{
	{Index: 0, MemoryMiB: 81559, Fence: inventory.FenceDriver},
	{Index: 1, MemoryMiB: 81559, Fence: inventory.FenceDriver},
	{Index: 2, MemoryMiB: 40960, MIG: true},
	{Index: 3, MemoryMiB: 81559, Fence: inventory.FenceNone},
}

func TestPlanEveryJobKind(t *testing.T) {
	for _, c := range []struct {
		name   string
		slices []Slice
		want   Decision
	}{
		{"shard on one GPU", []Slice{{GPU: 1, Shards: 20}},
			Decision{Limits: []Limit{{GPU: 1, Bytes: 20 << 30}}, Fence: inventory.FenceDriver}},
		{"shards on several GPUs", []Slice{{GPU: 0, Shards: 10}, {GPU: 1, Shards: 10}},
			Decision{Limits: []Limit{{GPU: 0, Bytes: 10 << 30}, {GPU: 1, Bytes: 10 << 30}}, Fence: inventory.FenceDriver}},
		{"split shards (MULTIPLE_SHARING_GRES_PJ)", []Slice{{GPU: 1, Shards: 7}, {GPU: 0, Shards: 23}},
			Decision{Limits: []Limit{{GPU: 0, Bytes: 23 << 30}, {GPU: 1, Bytes: 7 << 30}}, Fence: inventory.FenceDriver}},
		{"MIG instance", []Slice{{GPU: 2, Whole: true}}, Decision{Fence: inventory.FenceHardware}},
		{"whole GPU", []Slice{{GPU: 0, Whole: true}}, Decision{Fence: inventory.FenceHardware}},
		{"shard on a GPU without a fence", []Slice{{GPU: 3, Shards: 5}},
			Decision{Fence: inventory.FenceNone, Unfenced: []int{3}}},
		{"split over a fenced and an unfenced GPU", []Slice{{GPU: 0, Shards: 5}, {GPU: 3, Shards: 5}},
			Decision{Limits: []Limit{{GPU: 0, Bytes: 5 << 30}}, Fence: inventory.FenceNone, Unfenced: []int{3}}},
		{"no GPU here", nil, Decision{}},
	} {
		got, err := Plan(c.slices, node, unit)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Plan = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestPlanRefusesAnAllocationTheNodeCannotHold(t *testing.T) {
	for _, s := range [][]Slice{
		{{GPU: 9, Shards: 1}},  // a GPU the inventory does not list
		{{GPU: 0, Shards: 80}}, // more than the GPU's memory
		{{GPU: 2, Shards: 4}},  // shards on a MIG GPU
		{{GPU: 0, Shards: -1}},
	} {
		if d, err := Plan(s, node, unit); err == nil {
			t.Errorf("Plan(%+v) = %+v; want an error", s, d)
		}
	}
}

// call is one SetMemoryLimits_v1 call as the mock saw it.
type call struct {
	GPU        int
	Path       string
	Soft, Hard uint64
}

// mockLib is go-nvml's mock with n devices that record every set and answer gets
// from what was set; set[i] overrides GPU i's answer to a set.
type mockLib struct {
	lib   *mock.Interface
	calls []call
}

func newMockLib(n int, symbols bool, set map[int]nvml.Return) *mockLib {
	m := &mockLib{}
	limits := map[string]nvml.MemoryLimits_v1{}
	devs := make([]*mock.Device, n)
	for i := range devs {
		i := i
		devs[i] = &mock.Device{
			SetMemoryLimits_v1Func: func(ns string, soft, hard uint64) nvml.Return {
				m.calls = append(m.calls, call{i, ns, soft, hard})
				if r, ok := set[i]; ok {
					return r
				}
				limits[fmt.Sprint(i, ns)] = nvml.MemoryLimits_v1{NameSpace: ns, SoftLimit: soft, HardLimit: hard}
				return nvml.SUCCESS
			},
			GetMemoryLimits_v1Func: func(ns string) (nvml.MemoryLimits_v1, nvml.Return) {
				l, ok := limits[fmt.Sprint(i, ns)]
				if !ok {
					return l, nvml.ERROR_NOT_FOUND
				}
				return l, nvml.SUCCESS
			},
		}
	}
	m.lib = &mock.Interface{
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
				if !symbols {
					return errors.New("undefined symbol " + s)
				}
				return nil
			}}
		},
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= n {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
	return m
}

const jobDir = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_4711"

func TestApplyAndClearMakeExactlyTheseCalls(t *testing.T) {
	for _, c := range []struct {
		name   string
		slices []Slice
		set    []call
	}{
		{"shard on one GPU", []Slice{{GPU: 1, Shards: 20}}, []call{{1, jobDir, 0, 20 << 30}}},
		{"shards on several GPUs", []Slice{{GPU: 0, Shards: 10}, {GPU: 1, Shards: 10}},
			[]call{{0, jobDir, 0, 10 << 30}, {1, jobDir, 0, 10 << 30}}},
		{"split shards", []Slice{{GPU: 0, Shards: 23}, {GPU: 1, Shards: 7}},
			[]call{{0, jobDir, 0, 23 << 30}, {1, jobDir, 0, 7 << 30}}},
		{"MIG instance", []Slice{{GPU: 2, Whole: true}}, nil},
		{"whole GPU", []Slice{{GPU: 0, Whole: true}}, nil},
	} {
		m := newMockLib(4, true, nil)
		d, err := Plan(c.slices, node, unit)
		if err == nil {
			err = Apply(NVML{m.lib}, jobDir, d.Limits)
		}
		if err != nil || !reflect.DeepEqual(m.calls, c.set) {
			t.Errorf("%s: calls %+v, %v; want %+v", c.name, m.calls, err, c.set)
			continue
		}
		m.calls = nil
		if err := Clear(NVML{m.lib}, jobDir, d.Limits); err != nil {
			t.Errorf("%s: Clear: %v", c.name, err)
		}
		var clear []call
		for _, s := range c.set {
			clear = append(clear, call{s.GPU, jobDir, 0, nvml.DEVICE_MEMORY_LIMIT_MAX})
		}
		if !reflect.DeepEqual(m.calls, clear) {
			t.Errorf("%s: clearing calls %+v; want %+v", c.name, m.calls, clear)
		}
	}
}

func TestApplyEveryNVMLFailure(t *testing.T) {
	limits := []Limit{{GPU: 0, Bytes: 8 << 30}, {GPU: 1, Bytes: 8 << 30}}
	for ret, wants := range map[nvml.Return]string{
		nvml.ERROR_NOT_SUPPORTED:      "not supported here",
		nvml.ERROR_FUNCTION_NOT_FOUND: "not supported here",
		nvml.ERROR_OPERATING_SYSTEM:   "could not be opened",
		nvml.ERROR_NO_PERMISSION:      "root only",
		nvml.ERROR_INVALID_ARGUMENT:   "above the GPU's memory",
	} {
		// GPU 1 refuses: GPU 0's limit, already set, is cleared again.
		m := newMockLib(2, true, map[int]nvml.Return{1: ret})
		err := Apply(NVML{m.lib}, jobDir, limits)
		want := []call{{0, jobDir, 0, 8 << 30}, {1, jobDir, 0, 8 << 30}, {0, jobDir, 0, nvml.DEVICE_MEMORY_LIMIT_MAX}}
		if err == nil || !strings.Contains(err.Error(), wants) || !strings.Contains(err.Error(), "GPU 1") {
			t.Errorf("%v: Apply error %v; want one naming GPU 1 and %q", ret, err, wants)
		}
		if !reflect.DeepEqual(m.calls, want) {
			t.Errorf("%v: calls %+v; want %+v (the set limit cleared)", ret, m.calls, want)
		}
		if unsupported := errors.Is(err, ErrUnsupported); unsupported != (ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND) {
			t.Errorf("%v: errors.Is(ErrUnsupported) = %v", ret, unsupported)
		}
	}
}

func TestApplyWithoutTheSymbolCallsNothing(t *testing.T) {
	m := newMockLib(2, false, nil)
	err := Apply(NVML{m.lib}, jobDir, []Limit{{GPU: 0, Bytes: 1 << 30}})
	if !errors.Is(err, ErrUnsupported) || len(m.calls) != 0 {
		t.Fatalf("Apply on a library without %s: %v, calls %+v; want ErrUnsupported and no call", SymbolSet, err, m.calls)
	}
	// A mock with the methods unset panics inside go-nvml's mock: still an error.
	bare := &mock.Interface{
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(string) error { return nil }}
		},
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return &mock.Device{}, nvml.SUCCESS },
	}
	if err := Apply(NVML{bare}, jobDir, []Limit{{GPU: 0, Bytes: 1 << 30}}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Apply with unset mock methods: %v; want ErrUnsupported", err)
	}
}

func TestApplyRefusesALimitNVMLDoesNotReport(t *testing.T) {
	m := newMockLib(1, true, nil)
	d := m.lib.DeviceGetHandleByIndexFunc
	m.lib.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		dev, r := d(i)
		md := dev.(*mock.Device)
		md.GetMemoryLimits_v1Func = func(ns string) (nvml.MemoryLimits_v1, nvml.Return) {
			return nvml.MemoryLimits_v1{NameSpace: ns, HardLimit: nvml.DEVICE_MEMORY_LIMIT_MAX}, nvml.SUCCESS
		}
		return md, r
	}
	if err := Apply(NVML{m.lib}, jobDir, []Limit{{GPU: 0, Bytes: 1 << 30}}); err == nil || !strings.Contains(err.Error(), "reports a hard limit") {
		t.Fatalf("Apply = %v; want the read-back mismatch", err)
	}
}

// The job's directory is read from where Slurm put the hook, as each release and
// cgroup.conf names it, and never from a place another job or the user could make.
func TestFindJobCgroupAsSlurmNamesIt(t *testing.T) {
	root := "/sys/fs/cgroup"
	for _, c := range []struct {
		self, scope, want string
	}{
		// 22.05 and 24.11: job_ID below the scope; the hook in the extern step.
		{"0::/system.slice/slurmstepd.scope/job_4711/step_extern/slurm\n", "", jobDir},
		{"0::/system.slice/slurmstepd.scope/job_4711/step_extern/slurm\n", "system.slice/slurmstepd.scope", jobDir},
		// Several slurmd on one host: a scope per node.
		{"0::/system.slice/n3_slurmstepd.scope/job_4711/step_extern/slurm\n", "", root + "/system.slice/n3_slurmstepd.scope/job_4711"},
		// 26.05: the job's SLUID by default, under CgroupSlice (here gpu.slice).
		{"0::/gpu.slice/slurmstepd.scope/sEKNKTV3WPV500/step_extern/slurm\n", "", root + "/gpu.slice/slurmstepd.scope/sEKNKTV3WPV500"},
		// The hybrid files a v1+v2 host writes: only the 0:: line counts.
		{"4:memory:/slurm/uid_0/job_4711\n0::/system.slice/slurmstepd.scope/job_4711/step_extern/slurm\n", "", jobDir},
		// A step's sub-cgroup: still the job's directory.
		{"0::/system.slice/slurmstepd.scope/job_4711/step_0/user/task_0/mine\n", "", jobDir},
	} {
		got, err := FindJobCgroup([]byte(c.self), root, c.scope, 4711)
		if err != nil || got != c.want {
			t.Errorf("FindJobCgroup(%q, %q) = %q, %v; want %q", c.self, c.scope, got, err, c.want)
		}
	}
	for _, c := range []struct{ self, scope string }{
		{"0::/system.slice/slurmstepd.scope/job_47110/step_extern/slurm\n", ""}, // another job
		{"0::/system.slice/slurmstepd.scope/job_12/step_extern/slurm\n", ""},
		{"0::/system.slice/slurmd.service\n", ""},                                  // run by slurmd: no RunInJob
		{"4:memory:/slurm/uid_1000/job_4711/step_extern\n1:name=systemd:/x\n", ""}, // cgroup v1 only
		{"0::/system.slice/slurmstepd.scope/job_4711\n", ""},                       // no step
		{"0::/system.slice/slurmstepd.scope/mine/job_4711/step_0\n", ""},           // not Slurm's job directory
		{"0::/system.slice/slurmstepd.scope/SABCDEFGHJKMNP/step_0\n", ""},          // not a SLUID
		{"0::/system.slice/slurmstepd.scope/job_4711/../job_12/step_extern/slurm\n", ""},
		{"0::/user.slice/slurmstepd.scope/job_4711/step_extern/slurm\n", "system.slice/slurmstepd.scope"},
	} {
		if got, err := FindJobCgroup([]byte(c.self), root, c.scope, 4711); err == nil {
			t.Errorf("FindJobCgroup(%q, %q) = %q; want an error", c.self, c.scope, got)
		}
	}
	for _, bad := range [][2]string{{"sys/fs/cgroup", ""}, {"/sys/fs/cgroup/", ""}, {"/sys/fs/cgroup", "/abs"}, {"/sys/fs/cgroup", "../x"}} {
		if p, err := FindJobCgroup([]byte("0::/system.slice/slurmstepd.scope/job_1/step_extern\n"), bad[0], bad[1], 1); err == nil {
			t.Errorf("FindJobCgroup(root %q, scope %q) = %q; want an error", bad[0], bad[1], p)
		}
	}
	for _, id := range []string{"", "0", "-1", "12 ", "12/../13", "4711;x", "99999999999"} {
		if _, err := ParseJobID(id); err == nil {
			t.Errorf("ParseJobID(%q): want an error", id)
		}
	}
}

func TestCheckDirRefusesWhatAUserMade(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job_1")
	if err := os.Mkdir(job, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "job_2")
	if err := os.Symlink(job, link); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := CheckDir(os.Lstat, job); err != nil {
			t.Errorf("CheckDir(root's directory) = %v", err)
		}
		user := filepath.Join(dir, "job_3")
		os.Mkdir(user, 0o755)
		os.Lchown(user, 1000, 1000)
		if err := CheckDir(os.Lstat, user); err == nil || !strings.Contains(err.Error(), "uid 1000") {
			t.Errorf("CheckDir(a user's directory) = %v; want refused", err)
		}
	}
	if err := CheckDir(os.Lstat, link); err == nil {
		t.Error("CheckDir(symlink) = nil; want refused")
	}
	if err := CheckDir(os.Lstat, filepath.Join(dir, "job_9")); err == nil {
		t.Error("CheckDir(missing) = nil; want refused")
	}
}

func TestDetect(t *testing.T) {
	gpus := []inventory.GPU{{Index: 0}, {Index: 1, MIG: true}}
	probe := func(ret nvml.Return) *mockLib {
		m := newMockLib(2, true, nil)
		if ret != nvml.ERROR_NOT_FOUND {
			d := m.lib.DeviceGetHandleByIndexFunc
			m.lib.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
				dev, r := d(i)
				dev.(*mock.Device).GetMemoryLimits_v1Func = func(string) (nvml.MemoryLimits_v1, nvml.Return) { return nvml.MemoryLimits_v1{}, ret }
				return dev, r
			}
		}
		return m
	}
	good := Probe{Dir: "/sys/fs/cgroup"}
	for _, c := range []struct {
		name string
		lib  Lib
		p    Probe
		want string
	}{
		{"all answer", NVML{probe(nvml.ERROR_NOT_FOUND).lib}, good, inventory.FenceDriver},
		{"no hook", NVML{probe(nvml.ERROR_NOT_FOUND).lib}, Probe{Hook: "no RunInJob", Dir: "/"}, inventory.FenceNone},
		// A kernel without dmem still fences (the driver's misc backend).
		{"misc backend", NVML{probe(nvml.ERROR_NOT_FOUND).lib}, Probe{Backend: BackendMisc, Dir: "/sys/fs/cgroup/gpumem.probe"}, inventory.FenceDriver},
		{"no cgroup v2", NVML{probe(nvml.ERROR_NOT_FOUND).lib}, Probe{V2: "no cgroup2 at /sys/fs/cgroup", Dir: "/"}, inventory.FenceNone},
		{"no probe cgroup", NVML{probe(nvml.ERROR_NOT_FOUND).lib}, Probe{}, inventory.FenceNone},
		// A driver that takes the set but does not hold it is no fence.
		{"limit not held", NVML{probe(nvml.SUCCESS).lib}, good, inventory.FenceNone},
		{"no symbol", NVML{newMockLib(2, false, nil).lib}, good, inventory.FenceNone},
		{"NOT_SUPPORTED", NVML{probe(nvml.ERROR_NOT_SUPPORTED).lib}, good, inventory.FenceNone},
		{"OPERATING_SYSTEM", NVML{probe(nvml.ERROR_OPERATING_SYSTEM).lib}, good, inventory.FenceNone},
		{"NO_PERMISSION", NVML{probe(nvml.ERROR_NO_PERMISSION).lib}, good, inventory.FenceNone},
	} {
		f, why := Detect(c.lib, gpus, c.p)
		if f[0] != c.want || f[1] != inventory.FenceHardware || (c.want == inventory.FenceNone) != (why[0] != nil) {
			t.Errorf("%s: Detect = %v, %v; want [%s hardware]", c.name, f, why, c.want)
		}
	}
}

func TestHasDmem(t *testing.T) {
	if !HasDmem([]byte("cpuset cpu io memory dmem pids\n")) || HasDmem([]byte("cpuset cpu io memory pids rdma\n")) || HasDmem([]byte("dmemx")) {
		t.Error("HasDmem misreads cgroup.controllers")
	}
}

// 22.05 says only which GPUs a job's shards lie on: each gets the most the job may
// hold there (all of them, at most the GPU), never an even split, and never more than
// the GPU has.
func TestPlanSpreadOverGPUs(t *testing.T) {
	gpus := []inventory.GPU{
		{Index: 0, MemoryMiB: 81920, Fence: inventory.FenceDriver},
		{Index: 1, MemoryMiB: 81920, Fence: inventory.FenceDriver},
	}
	d, err := Plan([]Slice{{GPU: 0, Shards: 40, Spread: 80}, {GPU: 1, Shards: 40, Spread: 80}}, gpus, 1024)
	if err != nil || len(d.Limits) != 2 || d.Limits[0].Bytes != 80<<30 || d.Limits[1].Bytes != 80<<30 || len(d.Spread) != 2 {
		t.Fatalf("Plan = %+v, %v; want 80 GiB on each GPU", d, err)
	}
	d, err = Plan([]Slice{{GPU: 0, Shards: 50, Spread: 100}, {GPU: 1, Shards: 50, Spread: 100}}, gpus, 1024)
	if err != nil || d.Limits[0].Bytes != 80<<30 || d.Limits[1].Bytes != 80<<30 {
		t.Fatalf("Plan = %+v, %v; want each GPU's whole 80 GiB, no more", d, err)
	}
}

// A failed fence's reason always reads back: whatever the error says (lines, carriage
// returns, any length), the record written with it parses, so a step's check refuses
// the run from it instead of falling back on the node's inventory.
func TestFailureReasonAlwaysReadsBack(t *testing.T) {
	for _, msg := range []string{
		"fence: GPU 0: set hard limit: ERROR_UNKNOWN",
		"first\rline\nsecond line",
		strings.Repeat("é", 3000),
		"\r\n",
		"",
	} {
		why := FailureReason(errors.New(msg))
		r, err := ParseRecord(Record{Job: "7", Fence: inventory.FenceDriver, Failed: why}.Encode(), "7")
		if err != nil || r.Failed != why || why == "" || len(why) > MaxFailed {
			t.Errorf("reason of %.40q: %q (%d bytes) read back as %q, %v", msg, why, len(why), r.Failed, err)
		}
	}
}
