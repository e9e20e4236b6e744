package nvmlsrc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// FakeMemoryLimits makes a fake node's NVML offer the per-cgroup memory limits
// (nvmlDeviceSetMemoryLimits_v1 / GetMemoryLimits_v1). Each set is appended to Log as
// one JSON line (FakeLimitCall), and a get answers from that file, so separate
// processes (a prolog, an epilog, gpumemd, a test) see one driver state. A fake node
// without this block answers like a driver older than the functions: the symbols are
// missing.
type FakeMemoryLimits struct {
	Log string `json:"log"`
	// Answer, when set, is what every set and get answers instead (e.g.
	// "ERROR_NOT_SUPPORTED"), to play a driver or kernel that refuses.
	Answer string `json:"answer,omitempty"`
	// Cgroup makes the fake take, as the driver does, only a real cgroup v2
	// directory (one that has cgroup.procs): the lab's fence pass, where Slurm's
	// cgroup/v2 makes them, sets it.
	Cgroup bool `json:"cgroup,omitempty"`
	// Delay, when set (a Go duration), is how long every set call takes: a driver
	// that hangs.
	Delay string `json:"delay,omitempty"`
}

// FakeLimitCall is one set call as the fake records it.
type FakeLimitCall struct {
	Time      time.Time `json:"time"`
	GPU       int       `json:"gpu"`
	UUID      string    `json:"uuid"`
	Namespace string    `json:"namespace"`
	Soft      uint64    `json:"soft"`
	Hard      uint64    `json:"hard"`
	PID       int       `json:"pid"`             // the caller, so a test can see who set it
	EUID      int       `json:"euid"`            // and as whom
	Inode     uint64    `json:"inode,omitempty"` // the directory's, so a test can tell one made anew
}

var fakeReturns = map[string]nvml.Return{
	"ERROR_NOT_SUPPORTED":      nvml.ERROR_NOT_SUPPORTED,
	"ERROR_FUNCTION_NOT_FOUND": nvml.ERROR_FUNCTION_NOT_FOUND,
	"ERROR_OPERATING_SYSTEM":   nvml.ERROR_OPERATING_SYSTEM,
	"ERROR_NO_PERMISSION":      nvml.ERROR_NO_PERMISSION,
	"ERROR_INVALID_ARGUMENT":   nvml.ERROR_INVALID_ARGUMENT,
	"ERROR_UNKNOWN":            nvml.ERROR_UNKNOWN,
}

func (m *FakeMemoryLimits) check() error {
	if m.Log == "" {
		return errors.New("memory_limits: log needs a file path")
	}
	if _, err := time.ParseDuration(m.Delay); m.Delay != "" && err != nil {
		return fmt.Errorf("memory_limits: delay %q; want a duration such as 200s", m.Delay)
	}
	if _, ok := fakeReturns[m.Answer]; m.Answer != "" && !ok {
		return fmt.Errorf("memory_limits: answer %q; want one of ERROR_NOT_SUPPORTED, ERROR_FUNCTION_NOT_FOUND, ERROR_OPERATING_SYSTEM, ERROR_NO_PERMISSION, ERROR_INVALID_ARGUMENT, ERROR_UNKNOWN", m.Answer)
	}
	return nil
}

// wireLimits gives the fake server's devices the memory-limit calls, or hides their
// symbols.
func (n *FakeNode) wireLimits(srv *server.Server) {
	m := n.MemoryLimits
	srv.LookupSymbolFunc = func(s string) error {
		if m == nil && (s == "nvmlDeviceSetMemoryLimits_v1" || s == "nvmlDeviceGetMemoryLimits_v1") {
			return fmt.Errorf("%s: undefined symbol in the fake node's NVML", s)
		}
		return nil
	}
	if m == nil {
		return
	}
	for i, dev := range srv.Devices {
		d := dev.(*server.Device)
		d.SetMemoryLimits_v1Func = func(ns string, soft, hard uint64) nvml.Return {
			if delay, err := time.ParseDuration(m.Delay); err == nil {
				time.Sleep(delay)
			}
			if r, ok := fakeReturns[m.Answer]; ok {
				return r
			}
			switch {
			case os.Geteuid() != 0:
				return nvml.ERROR_NO_PERMISSION
			case soft > hard || (hard != nvml.DEVICE_MEMORY_LIMIT_MAX && hard > d.MemoryInfo.Total):
				return nvml.ERROR_INVALID_ARGUMENT
			}
			fi, err := os.Stat(ns)
			if err != nil || !fi.IsDir() || m.Cgroup && !isCgroup(ns) {
				return nvml.ERROR_OPERATING_SYSTEM
			}
			var ino uint64
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				ino = st.Ino
			}
			return m.record(FakeLimitCall{Time: time.Now().UTC(), GPU: i, UUID: d.UUID, Namespace: ns,
				Soft: soft, Hard: hard, PID: os.Getpid(), EUID: os.Geteuid(), Inode: ino})
		}
		d.GetMemoryLimits_v1Func = func(ns string) (nvml.MemoryLimits_v1, nvml.Return) {
			if r, ok := fakeReturns[m.Answer]; ok {
				return nvml.MemoryLimits_v1{}, r
			}
			if fi, err := os.Stat(ns); err != nil || !fi.IsDir() {
				return nvml.MemoryLimits_v1{}, nvml.ERROR_OPERATING_SYSTEM
			}
			calls, err := ReadFakeLimits(m.Log)
			if err != nil {
				return nvml.MemoryLimits_v1{}, nvml.ERROR_UNKNOWN
			}
			l, ok := CurrentFakeLimit(calls, i, ns)
			if !ok {
				return nvml.MemoryLimits_v1{}, nvml.ERROR_NOT_FOUND
			}
			return nvml.MemoryLimits_v1{NameSpace: ns, SoftLimit: l.Soft, HardLimit: l.Hard}, nvml.SUCCESS
		}
	}
}

// isCgroup reports whether dir is a cgroup v2 directory: it has cgroup.procs.
func isCgroup(dir string) bool {
	fi, err := os.Stat(dir + "/cgroup.procs")
	return err == nil && fi.Mode().IsRegular()
}

// record appends one call; a line this short is written by one write(2) with
// O_APPEND, so prologs of jobs starting together never interleave.
func (m *FakeMemoryLimits) record(c FakeLimitCall) nvml.Return {
	b, err := json.Marshal(c)
	if err != nil {
		return nvml.ERROR_UNKNOWN
	}
	f, err := os.OpenFile(m.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nvml.ERROR_UNKNOWN
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return nvml.ERROR_UNKNOWN
	}
	return nvml.SUCCESS
}

// ReadFakeLimits reads a fake node's limit log; a missing file is no calls.
func ReadFakeLimits(path string) ([]FakeLimitCall, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []FakeLimitCall
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var c FakeLimitCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("fake limit log %s: %v", path, err)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

// CurrentFakeLimit is the limit the calls leave on GPU gpu and cgroup ns: the last
// set, unless that one cleared it (soft 0, hard NVML_DEVICE_MEMORY_LIMIT_MAX).
func CurrentFakeLimit(calls []FakeLimitCall, gpu int, ns string) (FakeLimitCall, bool) {
	for k := len(calls) - 1; k >= 0; k-- {
		if c := calls[k]; c.GPU == gpu && c.Namespace == ns {
			return c, !(c.Soft == 0 && c.Hard == nvml.DEVICE_MEMORY_LIMIT_MAX)
		}
	}
	return FakeLimitCall{}, false
}
