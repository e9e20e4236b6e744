package shim

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/slurmrel"
)

// TestJobModifyReadsTheJob: scontrol update through the built plugin, with the job's
// record laid out as gpumem_jobrec.h says this release lays it out. A new gpu:mem is
// decided for the job it changes; an update that names no single plain job, or whose
// record fails its checks, is refused instead of being decided blind, and the reason is
// logged (22.05's job_modify has no message for the user).
func TestJobModifyReadsTheJob(t *testing.T) {
	h := newHarness(t, "", "LogLevel = info\n")
	lines := modify(t, h, "", []string{
		"7 gres:gpu:mem:30g rec=gres:shard:20@gpu",
		"7_1 gres:gpu:mem:30g rec=gres:shard:20@gpu",
		"7 gres:gpu:mem:30g rec=gres:shard:20@gpu badmagic",
		"7 - partition=gpu rec=gres:shard:20@gpu",
		"8 gres:gpu:mem:30g rec=gres:gpu:h100:1@gpu",
	})
	want := []string{
		"rc=0 tres_per_node=gres:shard:30 ",
		"rc=2072 tres_per_node=gres:gpu:mem:30g ",
		"rc=2072 tres_per_node=gres:gpu:mem:30g ",
		"rc=0 tres_per_node=(null) partition=gpu ",
		// Read: the job holds a whole GPU, so where Slurm keeps a pending job's GRES
		// name (before 24.11) the new size stays a whole GPU; after, it becomes shards.
		map[bool]string{true: "rc=0 tres_per_node=gres:gpu:h100:1 ", false: "rc=0 tres_per_node=gres:shard:30 "}[keepsGRESName(t, "")],
	}
	for i, w := range want {
		if !strings.HasPrefix(lines.out[i], w) {
			t.Errorf("update %d: %s; want %s...", i, lines.out[i], w)
		}
	}
	for _, w := range []string{"named by its plain job id", "the job could not be read"} {
		if !strings.Contains(lines.log, w) {
			t.Errorf("no refusal saying %q in the log:\n%s", w, lines.log)
		}
	}
	// The same through offsets measured at build time from a source tree of this very
	// release, where one is at hand (not in CI: the sources are on GitHub).
	if src := os.Getenv("GPUMEM_TEST_SLURM_SOURCE"); src != "" {
		h := newHarnessBuilt(t, "LogLevel = info\n", []string{"SLURM_SOURCE=" + src}, "")
		if l := modify(t, h, "-DGPUMEM_JOBREC_LOCAL", []string{"7 gres:gpu:mem:30g rec=gres:shard:20@gpu"}); !strings.HasPrefix(l.out[0], want[0]) {
			t.Errorf("built with SLURM_SOURCE=%s: %s; want %s...", src, l.out[0], want[0])
		}
	}
}

// TestJobModifyWithoutALayoutRefusesANewSize: a plugin built for a release
// gpumem_jobrec.h does not know never reads the record, and refuses a new gpu:mem with
// what to do instead, while a change that does not ask gpu:mem is left to Slurm.
func TestJobModifyWithoutALayoutRefusesANewSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two c-shared libraries")
	}
	if _, err := os.Stat("/usr/include/slurm/slurm_version.h"); err != nil {
		t.Skip("no Slurm headers (libslurm-dev):", err)
	}
	// This machine's headers under a micro release no table entry names.
	inc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(inc, "slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := filepath.Glob("/usr/include/slurm/*.h")
	re := regexp.MustCompile(`(?m)^#define SLURM_VERSION_NUMBER 0x([0-9a-fA-F]{4})[0-9a-fA-F]{2}`)
	for _, e := range ents {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(e) == "slurm_version.h" {
			if !re.Match(b) {
				t.Fatalf("%s: no SLURM_VERSION_NUMBER", e)
			}
			b = re.ReplaceAll(b, []byte("#define SLURM_VERSION_NUMBER 0x${1}fe"))
		}
		writeFile(t, filepath.Join(inc, "slurm", filepath.Base(e)), string(b))
	}
	h := newHarnessBuilt(t, "LogLevel = info\n", nil, inc)
	if !strings.Contains(h.built, "not known to this build") {
		t.Errorf("build.sh did not say the job records are unknown:\n%s", h.built)
	}
	l := modify(t, h, "-I"+inc, []string{
		"7 gres:gpu:mem:30g rec=gres:shard:20@gpu",
		"7 - partition=gpu rec=gres:shard:20@gpu",
	})
	if !strings.HasPrefix(l.out[0], "rc=2072 tres_per_node=gres:gpu:mem:30g ") {
		t.Errorf("a new size without a layout: %s; want it refused, untouched", l.out[0])
	}
	if !strings.HasPrefix(l.out[1], "rc=0 ") {
		t.Errorf("a move without a layout: %s; want it left to Slurm", l.out[1])
	}
	if !strings.Contains(l.log, "cannot check a change of GPU memory against a pending job on this Slurm release") {
		t.Errorf("no refusal for the user's reading in the log:\n%s", l.log)
	}
}

// keepsGRESName says whether the Slurm of the headers in inc ("" for this machine's)
// refuses to change a pending job's GRES between shards and GPUs (before the release
// table's update-swaps-gres gate).
func keepsGRESName(t *testing.T, inc string) bool {
	t.Helper()
	if inc == "" {
		inc = "/usr/include"
	}
	b, err := os.ReadFile(filepath.Join(inc, "slurm", "slurm_version.h"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define SLURM_VERSION_NUMBER 0x([0-9a-fA-F]{6})`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no SLURM_VERSION_NUMBER in", inc)
	}
	n, _ := strconv.ParseUint(string(m[1]), 16, 32)
	v := slurmrel.V(int(n>>16), int(n>>8&255), int(n&255))
	return !slurmrel.Table().Has(v, slurmrel.UpdateSwapsGRES)
}

type modifyRun struct {
	out []string
	log string
}

// modify compiles testdata/modify_harness.c with cflags (the plugin's own, so that it
// lays records out as the plugin reads them) and runs the lines through h's plugin.
func modify(t *testing.T, h *harness, cflags string, lines []string) modifyRun {
	t.Helper()
	bin := filepath.Join(h.dir, "modify")
	args := []string{"-O2", "-Wall", "-rdynamic", "-I../include", "-Itestdata", "-o", bin, "testdata/modify_harness.c", "-ldl"}
	if cflags != "" {
		args = append(strings.Fields(cflags), args...)
	}
	if h.local != "" {
		args = append([]string{"-I" + h.local}, args...)
	}
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc modify_harness.c: %v\n%s", err, b)
	}
	cmd := exec.Command(bin, filepath.Join(h.dir, "job_submit_gpumem.so"))
	cmd.Env = append(os.Environ(), "GPUMEM_CONF="+h.conf)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var logb strings.Builder
	cmd.Stderr = &logb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("modify harness: %v\n%s", err, logb.String())
	}
	var r modifyRun
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		r.out = append(r.out, sc.Text())
	}
	if len(r.out) != len(lines) {
		t.Fatalf("modify harness answered %d lines for %d:\n%s\n%s", len(r.out), len(lines), out, logb.String())
	}
	r.log = logb.String()
	return r
}
