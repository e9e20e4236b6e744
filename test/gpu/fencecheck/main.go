// Command fencecheck drives gpumem's own driver-fence code (internal/fence) on one cgroup
// for test/gpu/fence.sh, so that the device check proves the code gpumemd's prolog runs,
// not a copy of it:
//
//	fencecheck -cgroup DIR detect            the fence gpumemd would find on each GPU
//	fencecheck -cgroup DIR -mib N set        fence.Apply: hard limit N MiB on GPU -gpu
//	fencecheck -cgroup DIR get               what NVML reports on DIR for GPU -gpu
//	fencecheck -cgroup DIR clear             fence.Clear
//
// DIR is a cgroup v2 directory the caller made (never a job's). It prints what NVML
// answered and exits 0 on success, 1 when NVML refused (the answer is printed), 2 on
// bad arguments.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout))
}

func run(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("fencecheck", flag.ContinueOnError)
	dir := fs.String("cgroup", "", "cgroup v2 directory (absolute, made by the caller)")
	gpu := fs.Int("gpu", 0, "NVML index of the GPU")
	mib := fs.Uint64("mib", 0, "hard limit in MiB (set)")
	spec := fs.String("nvml", "real", "NVML source: "+nvmlsrc.Usage)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || !filepath.IsAbs(*dir) || filepath.Clean(*dir) != *dir {
		fmt.Fprintln(os.Stderr, "usage: fencecheck -cgroup DIR [-gpu N] [-mib N] detect|set|get|clear")
		return 2
	}
	src, err := nvmlsrc.Open(*spec)
	if err != nil {
		fmt.Fprintln(out, "nvml:", err)
		return 1
	}
	defer src.Close()
	lib := fence.NVML{Interface: src.NVML}
	limit := []fence.Limit{{GPU: *gpu, Bytes: *mib << 20}}
	switch fs.Arg(0) {
	case "detect":
		return detect(out, src, lib, *dir)
	case "set":
		if *mib == 0 {
			fmt.Fprintln(os.Stderr, "fencecheck set: -mib N, N > 0")
			return 2
		}
		return answer(out, "set", fence.Apply(lib, *dir, limit))
	case "get":
		if err := lib.Symbols(); err != nil {
			return answer(out, "get", err)
		}
		d, err := lib.Device(*gpu)
		if err != nil {
			return answer(out, "get", err)
		}
		l, ret := d.GetMemoryLimits_v1(*dir)
		if ret != nvml.SUCCESS {
			fmt.Fprintf(out, "get: GPU %d on %s: %v\n", *gpu, *dir, ret)
			return 1
		}
		hard := fmt.Sprint(l.HardLimit >> 20)
		if l.HardLimit == nvml.DEVICE_MEMORY_LIMIT_MAX {
			hard = "none"
		}
		fmt.Fprintf(out, "get: GPU %d on %s: hard_mib=%s soft_mib=%d used_mib=%d\n", *gpu, *dir, hard, l.SoftLimit>>20, l.CurrentUsed>>20)
		return 0
	case "clear":
		return answer(out, "clear", fence.Clear(lib, *dir, limit))
	}
	fmt.Fprintf(os.Stderr, "fencecheck: %q; want detect, set, get or clear\n", fs.Arg(0))
	return 2
}

// detect runs fence.Detect as gpumemd does when it writes the inventory, with the hook
// taken as present (this check sets the limit itself) and dir as the probed cgroup.
func detect(out io.Writer, src *nvmlsrc.Source, lib fence.Lib, dir string) int {
	n, ret := src.NVML.DeviceGetCount()
	if ret != nvml.SUCCESS {
		fmt.Fprintln(out, "detect: device count:", ret)
		return 1
	}
	var gpus []inventory.GPU
	for i := 0; i < n; i++ {
		g := inventory.GPU{Index: i}
		if d, ret := src.NVML.DeviceGetHandleByIndex(i); ret == nvml.SUCCESS {
			if cur, _, ret := d.GetMigMode(); ret == nvml.SUCCESS {
				g.MIG = cur == nvml.DEVICE_MIG_ENABLE
			}
		}
		gpus = append(gpus, g)
	}
	p := fence.Probe{Dir: dir}
	root := cgroupRoot(dir)
	if b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err != nil {
		p.V2 = "no cgroup2 hierarchy at " + root
	} else if p.Backend = fence.BackendMisc; fence.HasDmem(b) {
		p.Backend = fence.BackendDmem
	}
	fences, why := fence.Detect(lib, gpus, p)
	for i := range gpus {
		w := ""
		if why[i] != nil {
			w = why[i].Error()
		}
		fmt.Fprintf(out, "detect: GPU %d fence=%s backend=%s why=%q\n", i, fences[i], p.Backend, w)
	}
	return 0
}

// cgroupRoot is the cgroup2 mount above dir, the directory whose cgroup.controllers
// says what the kernel offers.
func cgroupRoot(dir string) string {
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cgroup.controllers")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(d), "cgroup.controllers")); err != nil {
			return d
		}
	}
	return filepath.Dir(dir)
}

func answer(out io.Writer, what string, err error) int {
	if err == nil {
		fmt.Fprintln(out, what+": SUCCESS")
		return 0
	}
	if errors.Is(err, fence.ErrUnsupported) {
		fmt.Fprintln(out, what+": UNSUPPORTED:", err)
		return 1
	}
	fmt.Fprintln(out, what+": FAILED:", err)
	return 1
}
