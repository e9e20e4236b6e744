package nvmlsrc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// migMinorsPath is where the driver publishes the minor numbers of /dev/nvidia-caps
// files; Slurm's gpu/nvml plugin reads the same file.
const migMinorsPath = "/proc/driver/nvidia-caps/mig-minors"

// The driver numbers caps files in a fixed layout: 1 config, 2 monitor, then per GPU
// minor 15 GPU instances of 9 entries each (the GI's access file, then CI 0..7). Checked
// against a real driver's mig-minors: gpu1/gi0/access 138, gpu1/gi2/ci0/access 157.
const (
	capsFirst     = 3
	capsGIsPerGPU = 15
	capsPerGI     = 9
	capsMaxCI     = 8
)

// DriverMigMinors numbers caps files as the driver does; mocks and fakes use it so
// that their gres.conf looks like a real node's.
func DriverMigMinors(gpuMinor, gi, ci int) (int, int, error) {
	if gpuMinor < 0 || gi < 0 || gi >= capsGIsPerGPU || ci < 0 || ci >= capsMaxCI {
		return 0, 0, fmt.Errorf("nvml: no caps file for GPU %d GI %d CI %d (GI 0-%d, CI 0-%d)", gpuMinor, gi, ci, capsGIsPerGPU-1, capsMaxCI-1)
	}
	g := capsFirst + (gpuMinor*capsGIsPerGPU+gi)*capsPerGI
	return g, g + 1 + ci, nil
}

// procMigMinors looks minors up in the driver's mig-minors file, read on each call
// because instances come and go with MIG reconfiguration.
func procMigMinors(path string) func(int, int, int) (int, int, error) {
	return func(gpuMinor, gi, ci int) (int, int, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, 0, fmt.Errorf("nvml: MIG caps minors: %w", err)
		}
		defer f.Close()
		return lookupMigMinors(f, gpuMinor, gi, ci)
	}
}

// lookupMigMinors reads lines like "gpu0/gi1/access 12" and "gpu0/gi1/ci0/access 13".
func lookupMigMinors(r io.Reader, gpuMinor, gi, ci int) (int, int, error) {
	giKey := fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, gi)
	ciKey := fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, gi, ci)
	giMinor, ciMinor := -1, -1
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || (fields[0] != giKey && fields[0] != ciKey) {
			continue
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil {
			return 0, 0, fmt.Errorf("nvml: mig-minors line %q: minor is not a number", sc.Text())
		}
		if fields[0] == giKey {
			giMinor = n
		} else {
			ciMinor = n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if giMinor < 0 || ciMinor < 0 {
		return 0, 0, fmt.Errorf("nvml: mig-minors has no %s and %s", giKey, ciKey)
	}
	return giMinor, ciMinor, nil
}
