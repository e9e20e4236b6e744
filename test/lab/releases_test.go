package lab

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The scripts that build and test per release, which must take every release from the
// release table (internal/slurmrel/releases.txt) through cmd/slurm-release.
var releaseScripts = []string{
	"Makefile", "cgo/build.sh", "test/e2e.sh", "test/package-test.sh", "packaging/build.sh",
	"test/lab/*.sh", "test/faults.sh", "test/matrix/run.sh", "test/steer/*.sh", "test/bench/*.sh", "test/demo.sh",
}

// TestReleasesAreNamedOnlyInTheTable: no code line of those scripts names a Slurm
// release (comments may), and no C of the plugins compares Slurm's version itself: a
// difference between releases is a gate of the table (cgo/include/gpumem_gates.h).
func TestReleasesAreNamedOnlyInTheTable(t *testing.T) {
	top := filepath.Join("..", "..")
	rel := regexp.MustCompile(`\b2[0-9]\.(0[0-9]|1[0-2])\b`)
	for _, g := range releaseScripts {
		files, _ := filepath.Glob(filepath.Join(top, g))
		if len(files) == 0 {
			t.Errorf("%s: no such file", g)
		}
		for _, f := range files {
			eachLine(t, f, func(n int, l string) {
				code, _, _ := strings.Cut(l, "#")
				if rel.MatchString(code) {
					t.Errorf("%s:%d names a Slurm release: %s", f, n, strings.TrimSpace(l))
				}
			})
		}
	}
	var cfiles []string
	for _, g := range []string{"cgo/*/*.go", "cgo/*/*.c", "cgo/include/*.h", "cgo/shim/testdata/*.c", "test/bench/*.c"} {
		m, _ := filepath.Glob(filepath.Join(top, g))
		cfiles = append(cfiles, m...)
	}
	for _, f := range cfiles {
		switch filepath.Base(f) {
		case "gpumem_gates.h", "gpumem_jobrec.h": // printed from the table; measured offsets
			continue
		}
		eachLine(t, f, func(n int, l string) {
			if strings.Contains(l, "SLURM_VERSION_NUM(") {
				t.Errorf("%s:%d compares Slurm's version: use a gate of the release table (gpumem_gates.h): %s", f, n, strings.TrimSpace(l))
			}
		})
	}
}

func eachLine(t *testing.T, path string, f func(int, string)) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	s := bufio.NewScanner(fh)
	s.Buffer(nil, 1<<20)
	for n := 1; s.Scan(); n++ {
		f(n, s.Text())
	}
}

// TestAMadeUpReleaseIsOneRow: a row for a release nobody has made is all that lab.sh,
// e2e.sh and cgo/build.sh need to know it; without the row each refuses it by name.
func TestAMadeUpReleaseIsOneRow(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool to run cmd/slurm-release:", err)
	}
	top, _ := filepath.Abs(filepath.Join("..", ".."))
	real, err := os.ReadFile(filepath.Join(top, "internal", "slurmrel", "releases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	with := filepath.Join(dir, "with.txt")
	row := "22.08 debian:duke 1700 19097 munge none no\n"
	if err := os.WriteFile(with, append(real, row...), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(table string, args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = top
		cmd.Env = append(os.Environ(), "LAB_SLURM=22.08", "LAB_CHROOT_CACHE="+dir+"/cache")
		if table != "" {
			cmd.Env = append(cmd.Env, "GPUMEM_RELEASE_TABLE="+table)
		}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	refused := "Slurm 22.08 is not in gpumem's release table"

	out, err := run(with, "test/lab/lab.sh", "where")
	if err != nil || !strings.Contains(out, "root="+dir+"/cache/duke\n") || !strings.Contains(out, "prometheus=19097") {
		t.Errorf("lab.sh where with the row: %v\n%s", err, out)
	}
	if out, err := run("", "test/lab/lab.sh", "where"); err == nil || !strings.Contains(out, refused) {
		t.Errorf("lab.sh where without the row: %v\n%s; want it refused by name", err, out)
	}
	out, err = run(with, "test/e2e.sh", "--list", "22.08-fence")
	if err != nil || out != "22.08-fence\n" {
		t.Errorf("e2e.sh --list 22.08-fence with the row: %v\n%s", err, out)
	}
	if out, err := run("", "test/e2e.sh", "--list", "22.08-fence"); err == nil || !strings.Contains(out, refused) {
		t.Errorf("e2e.sh --list 22.08-fence without the row: %v\n%s; want it refused by name", err, out)
	}

	// build.sh, on this machine's Slurm headers (22.05's in CI) stamped as 22.08.1, a release that never was, whose gates are all 22.05's.
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	ents, _ := filepath.Glob("/usr/include/slurm/*.h")
	if len(ents) == 0 {
		t.Skip("no Slurm headers (libslurm-dev)")
	}
	inc := filepath.Join(dir, "include")
	if err := os.MkdirAll(filepath.Join(inc, "slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	num := regexp.MustCompile(`(?m)^#define SLURM_VERSION_NUMBER 0x[0-9a-fA-F]+`)
	for _, e := range ents {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(e) == "slurm_version.h" {
			b = num.ReplaceAll(b, []byte("#define SLURM_VERSION_NUMBER 0x160801"))
		}
		if err := os.WriteFile(filepath.Join(inc, "slurm", filepath.Base(e)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err = run(with, "cgo/build.sh", filepath.Join(dir, "out"), inc)
	if err != nil || !strings.Contains(out, "for Slurm 22.08.1") {
		t.Errorf("build.sh for 22.08.1 with the row: %v\n%s", err, out)
	}
	if out, err := run("", "cgo/build.sh", filepath.Join(dir, "out2"), inc); err == nil || !strings.Contains(out, "Slurm 22.08.1 is not in gpumem's release table") {
		t.Errorf("build.sh for 22.08.1 without the row: %v\n%s; want it refused by name", err, out)
	}
}
