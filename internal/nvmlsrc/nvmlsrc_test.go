package nvmlsrc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestOpenRejectsBadSpecs(t *testing.T) {
	for spec, want := range map[string]string{
		"mock:dgxz":      `unknown mock "dgxz"`,
		"cuda":           `unknown backend "cuda"`,
		"fake:":          "fake needs a file",
		"real:x":         "real takes no argument",
		"fake:/no/such":  "no such file",
		"mock":           `unknown mock ""`,
		"fake:/dev/null": "fake node /dev/null",
	} {
		_, err := Open(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v; want an error containing %q", spec, err, want)
		}
	}
}

func TestOpenRealWithoutDriverIsOneClearError(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	_, err := Open("real")
	if err == nil || !strings.Contains(err.Error(), "libnvidia-ml.so.1 not found") {
		t.Fatalf("Open(real) without a driver = %v; want the missing-library error", err)
	}
}

func TestMocksAnswerWhatTheSidecarAsks(t *testing.T) {
	for name, wantMiB := range map[string]uint64{"dgxa100": 40960, "dgxh100": 81920, "dgxh200": 144384} {
		src, err := Open("mock:" + name)
		if err != nil {
			t.Fatal(err)
		}
		n, ret := src.NVML.DeviceGetCount()
		if ret != nvml.SUCCESS || n != 8 {
			t.Fatalf("%s: %d GPUs (%v); want 8", name, n, ret)
		}
		dev, _ := src.NVML.DeviceGetHandleByIndex(5)
		mem, ret := dev.GetMemoryInfo()
		if ret != nvml.SUCCESS || mem.Total>>20 != wantMiB || mem.Free != mem.Total {
			t.Errorf("%s: memory %+v (%v); want %d MiB total, all free", name, mem, ret, wantMiB)
		}
		mask, ret := dev.GetCpuAffinity(256)
		if got := FormatCPUList(MaskCPUs(mask)); ret != nvml.SUCCESS || got != "64-127" {
			t.Errorf("%s: GPU 5 affinity %q (%v); want the second socket 64-127", name, got, ret)
		}
		procs, ret := dev.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS || len(procs) != 0 {
			t.Errorf("%s: processes %v (%v); want none", name, procs, ret)
		}
		if temp, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); ret != nvml.SUCCESS || temp == 0 {
			t.Errorf("%s: temperature %d (%v)", name, temp, ret)
		}
		uuid1, _ := dev.GetUUID()
		src.Close()
		again, _ := Open("mock:" + name)
		dev2, _ := again.NVML.DeviceGetHandleByIndex(5)
		if uuid2, _ := dev2.GetUUID(); uuid2 != uuid1 {
			t.Errorf("%s: UUID changed between opens (%s, %s): inventories would never be stable", name, uuid1, uuid2)
		}
		again.Close()
	}
}

func TestGuardTurnsANilMockMethodIntoAnError(t *testing.T) {
	src, err := Open("mock:dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	dev, _ := src.NVML.DeviceGetHandleByIndex(0)
	err = Guard(func() error { _, _ = dev.GetSerial(); return nil })
	if !errors.Is(err, ErrNotImplemented) {
		t.Fatalf("Guard = %v; want ErrNotImplemented", err)
	}
}

func writeFake(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFakeFileErrorsNameTheProblem(t *testing.T) {
	for body, want := range map[string]string{
		`{"gpus": []}`:                                       "no gpus",
		`{"gpus": [{"model": "v100"}]}`:                      `unknown model "v100"`,
		`{"gpus": [{"name": "X"}]}`:                          "needs name and memory_mib",
		`{"gpus": [{"model": "h100-80gb", "pid": 3}]}`:       `unknown field "pid"`,
		`{"gpus": [{"model": "h100-80gb", "cores": "4-2"}]}`: "not a range",
		`{"gpus": [{"model": "h100-80gb", "mig": {"enabled": true, "instances": [{"profile": "5g.50gb"}]}}]}`:                                                                   `profile "5g.50gb" not offered`,
		`{"gpus": [{"model": "h100-80gb", "mig": {"enabled": true, "instances": [{"profile": "3g.40gb", "start": 1}]}}]}`:                                                       "cannot start at slot 1",
		`{"gpus": [{"model": "h100-80gb", "mig": {"enabled": true, "instances": [{"profile": "4g.40gb", "start": 0}, {"profile": "2g.20gb", "start": 2}]}}]}`:                   "overlaps",
		`{"gpus": [{"model": "h100-80gb", "mig": {"enabled": true, "instances": [{"profile": "1g.10gb", "start": 0, "gi": 1}, {"profile": "1g.10gb", "start": 1, "gi": 1}]}}]}`: "want a distinct id",
		`{"gpus": [{"model": "h100-80gb", "mig": {"enabled": false, "instances": [{"profile": "7g.80gb"}]}}]}`:                                                                  "mig.enabled is false",
	} {
		_, err := Open("fake:" + writeFake(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("fake %s: %v; want an error containing %q", body, err, want)
		}
	}
}

func TestFakeLiveFieldsFollowTheFile(t *testing.T) {
	path := writeFake(t, `{"gpus": [{"model": "h100-80gb", "processes": [{"pid": 100, "used_mib": 1024}]}]}`)
	src, err := Open("fake:" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dev, _ := src.NVML.DeviceGetHandleByIndex(0)
	procs, _ := dev.GetComputeRunningProcesses()
	if len(procs) != 1 || procs[0].Pid != 100 || procs[0].UsedGpuMemory != 1<<30 {
		t.Fatalf("processes %+v; want pid 100 using 1 GiB", procs)
	}
	// A lab starts a job and writes its PID; the next query must see it.
	later := `{"gpus": [{"model": "h100-80gb", "temperature_c": 77, "processes": [{"pid": 100, "used_mib": 1024}, {"pid": 200, "used_mib": 3072}]}]}`
	if err := os.WriteFile(path, []byte(later), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(path, time.Now().Add(time.Second), time.Now().Add(time.Second))
	procs, _ = dev.GetComputeRunningProcesses()
	mem, _ := dev.GetMemoryInfo()
	temp, _ := dev.GetTemperature(nvml.TEMPERATURE_GPU)
	if len(procs) != 2 || mem.Used != 4<<30 || temp != 77 {
		t.Fatalf("after the file changed: %d processes, %d bytes used, %d C; want 2, 4 GiB, 77", len(procs), mem.Used, temp)
	}
	// A broken rewrite keeps the last good state rather than losing the GPU.
	if err := os.WriteFile(path, []byte(`{"gpus": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if procs, ret := dev.GetComputeRunningProcesses(); ret != nvml.SUCCESS || len(procs) != 2 {
		t.Fatalf("after a broken rewrite: %d processes (%v); want the last good 2", len(procs), ret)
	}
}

func TestFakeXIDEventsAndLostGPU(t *testing.T) {
	src, err := Open("fake:" + writeFake(t, `{"gpus": [{"model": "h100-80gb"}, {"model": "h100-80gb", "xids": [{"xid": 79}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	set, ret := src.NVML.EventSetCreate()
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	for i := 0; i < 2; i++ {
		dev, _ := src.NVML.DeviceGetHandleByIndex(i)
		if ret := dev.RegisterEvents(nvml.EventTypeXidCriticalError, set); ret != nvml.SUCCESS {
			t.Fatal(ret)
		}
	}
	ev, ret := set.Wait(10)
	if ret != nvml.SUCCESS || ev.EventData != 79 || ev.EventType != nvml.EventTypeXidCriticalError {
		t.Fatalf("first event %+v (%v); want XID 79", ev, ret)
	}
	if _, ret := set.Wait(10); ret != nvml.ERROR_TIMEOUT {
		t.Fatalf("second wait %v; want a timeout: each XID is delivered once", ret)
	}
	src.Fake.AddXID(0, FakeXID{XID: 13})
	if ev, ret := set.Wait(10); ret != nvml.SUCCESS || ev.EventData != 13 {
		t.Fatalf("queued event %+v (%v); want XID 13", ev, ret)
	}
	src.Fake.SetLost(1, true)
	dev, _ := src.NVML.DeviceGetHandleByIndex(1)
	if _, ret := dev.GetMemoryInfo(); ret != nvml.ERROR_GPU_IS_LOST {
		t.Fatalf("lost GPU answered %v; want ERROR_GPU_IS_LOST", ret)
	}
}

func TestCPUListRoundTrip(t *testing.T) {
	cpus, err := ParseCPUList("0-3,8,10-11")
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatCPUList(MaskCPUs(cpuMask(cpus, 2))); got != "0-3,8,10-11" {
		t.Fatalf("round trip = %q", got)
	}
	for _, bad := range []string{"", "a", "3-1", "4,2", "-1"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
}

func TestMigMinorsFromTheDriverFile(t *testing.T) {
	// Lines as a real driver (H200 node) prints them.
	table := "config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngpu1/gi0/access 138\ngpu1/gi2/access 156\ngpu1/gi2/ci0/access 157\n"
	gi, ci, err := lookupMigMinors(strings.NewReader(table), 1, 2, 0)
	if err != nil || gi != 156 || ci != 157 {
		t.Fatalf("lookup = %d, %d, %v; want 156, 157", gi, ci, err)
	}
	if dgi, dci, _ := DriverMigMinors(1, 2, 0); dgi != gi || dci != ci {
		t.Fatalf("driver numbering gives %d, %d; the driver's file says %d, %d", dgi, dci, gi, ci)
	}
	if _, _, err := lookupMigMinors(strings.NewReader(table), 3, 0, 0); err == nil {
		t.Fatal("a missing GPU was found")
	}
}
