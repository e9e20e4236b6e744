package nvmlsrc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestFakeMemoryLimitsRecordAndAnswer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the fake answers NO_PERMISSION to non-root callers, as NVML does")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "limits.log")
	cg := filepath.Join(dir, "job_7")
	os.Mkdir(cg, 0o755)
	src, err := Open("fake:" + writeFake(t, `{"memory_limits": {"log": "`+log+`"}, "gpus": [{"model": "h100-80gb"}, {"model": "h100-80gb"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.NVML.Extensions().LookupSymbol("nvmlDeviceSetMemoryLimits_v1"); err != nil {
		t.Fatalf("LookupSymbol: %v", err)
	}
	d, _ := src.NVML.DeviceGetHandleByIndex(1)
	if _, r := d.GetMemoryLimits_v1(cg); r != nvml.ERROR_NOT_FOUND {
		t.Fatalf("get before any set: %v; want NOT_FOUND", r)
	}
	if r := d.SetMemoryLimits_v1(cg, 0, 20<<30); r != nvml.SUCCESS {
		t.Fatalf("set: %v", r)
	}
	if r := d.SetMemoryLimits_v1(filepath.Join(dir, "job_8"), 0, 1<<30); r != nvml.ERROR_OPERATING_SYSTEM {
		t.Errorf("set on a missing cgroup: %v; want OPERATING_SYSTEM", r)
	}
	if r := d.SetMemoryLimits_v1(cg, 0, 200<<30); r != nvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("set above the GPU's memory: %v; want INVALID_ARGUMENT", r)
	}
	// Another process (a fresh open) sees the same state, read from the log.
	again, err := Open(src.Spec)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	d2, _ := again.NVML.DeviceGetHandleByIndex(1)
	if l, r := d2.GetMemoryLimits_v1(cg); r != nvml.SUCCESS || l.HardLimit != 20<<30 {
		t.Fatalf("get after set: %+v, %v", l, r)
	}
	d2.SetMemoryLimits_v1(cg, 0, nvml.DEVICE_MEMORY_LIMIT_MAX)
	if _, r := d.GetMemoryLimits_v1(cg); r != nvml.ERROR_NOT_FOUND {
		t.Fatalf("get after clear: %v; want NOT_FOUND", r)
	}
	calls, err := ReadFakeLimits(log)
	if err != nil || len(calls) != 2 || calls[0].GPU != 1 || calls[0].Namespace != cg || calls[0].Hard != 20<<30 || calls[0].EUID != 0 {
		t.Fatalf("log %+v, %v; want the set and the clear on GPU 1", calls, err)
	}
}

func TestFakeWithoutMemoryLimitsHidesTheSymbols(t *testing.T) {
	src, err := Open("fake:" + writeFake(t, `{"gpus": [{"model": "h100-80gb"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.NVML.Extensions().LookupSymbol("nvmlDeviceSetMemoryLimits_v1"); err == nil {
		t.Fatal("LookupSymbol found the limit functions on a fake node without memory_limits")
	}
	if _, err := DecodeFake([]byte(`{"memory_limits": {"log": "/x", "answer": "maybe"}, "gpus": [{"model": "h100-80gb"}]}`)); err == nil {
		t.Fatal("an unknown answer was accepted")
	}
}
