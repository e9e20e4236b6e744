package shim

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMemoCopyFailureIsAMiss compiles testdata/cache_harness.c, which includes
// cgo/include/gpumem_cache.h with strdup replaced by one that fails on a chosen call. For
// every copy a memo hit makes, failing that copy must turn the hit into a miss with every
// out[] and the refusal NULL and changed[] 0 (never an answer with a field missing, which
// would unset that field in Slurm's job), and leave the memo answering the next job;
// failing any copy of a put must leave the slot empty. It runs once as built and once
// under AddressSanitizer where the compiler has it, which also catches a partly copied
// answer that leaks or is freed twice. It needs only a C compiler, not Slurm's headers.
func TestMemoCopyFailureIsAMiss(t *testing.T) {
	cc := ""
	for _, name := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(name); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("no C compiler (cc, gcc or clang) on $PATH to build testdata/cache_harness.c")
	}
	dir := t.TempDir()
	build := func(bin string, flags ...string) ([]byte, error) {
		args := append([]string{"-O1", "-g", "-Wall", "-Werror", "-pthread", "-I../include"}, flags...)
		args = append(args, "-o", filepath.Join(dir, bin), "testdata/cache_harness.c")
		return exec.Command(cc, args...).CombinedOutput()
	}
	run := func(bin string, env ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, bin))
		cmd.Env = append(cmd.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok ") {
			t.Errorf("%s: %v\n%s", bin, err, out)
			return
		}
		t.Logf("%s: %s", bin, strings.TrimSpace(string(out)))
	}
	if b, err := build("cache"); err != nil {
		t.Fatalf("%s testdata/cache_harness.c: %v\n%s", cc, err, b)
	}
	run("cache")
	if b, err := build("cache-asan", "-fsanitize=address", "-fno-omit-frame-pointer"); err != nil {
		t.Logf("not run under AddressSanitizer: %s cannot build with -fsanitize=address: %v\n%s", cc, err, b)
		return
	}
	run("cache-asan", "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=23")
}
