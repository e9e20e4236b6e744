package shim

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestJobSubmitShimAnswersAlikeJobsTheSame loads the built job_submit_gpumem.so into a
// stand-in for slurmctld (testdata/submit_harness.c) and submits through the C shim,
// whose prefilter and memo of recent verdicts answer most jobs without Go: answers must
// be the same as Go's, every time, and a changed inventory must be seen once the reload
// interval has passed.
func TestJobSubmitShimAnswersAlikeJobsTheSame(t *testing.T) {
	h := newHarness(t, "submit", "ReloadInterval = 300ms\nLogLevel = error\n")
	cmd := h.command("job_submit_gpumem.so")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	submit := func(line string) string {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("harness after %q: %v", line, err)
		}
		return strings.TrimSuffix(got, "\n")
	}

	rewrite := "rc=0 tres_per_node=gres:shard:20 same=0 err="
	cases := []struct{ in, want string }{
		{"gres:gpu:mem:20g", rewrite},
		{"gres:gpu:mem:20g", rewrite},
		{"gres:gpu:mem:60g", "rc=0 tres_per_node=gres:shard:60 same=0 err="},
		{"gres:gpu:2", "rc=0 tres_per_node=gres:gpu:2 same=1 err="},
		{"-", "rc=0 tres_per_node=(null) same=1 err="},
		{"gres:gpu:mem:20g", rewrite},
	}
	for _, c := range cases {
		if got := submit(c.in); got != c.want {
			t.Errorf("submit %q:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	// An earlier plugin's message is kept, gpumem's follows it on its own line.
	if got := submit("gres:gpu:mem:500g prior=earlier"); !strings.HasPrefix(got, "rc=2072 tres_per_node=gres:gpu:mem:500g same=1 err=earlier|") || !strings.Contains(got, "500") {
		t.Errorf("refusal after an earlier plugin's message: %s; want that message kept, then gpumem's", got)
	}
	if got := submit("gres:gpu:mem:20g prior=earlier"); got != "rc=0 tres_per_node=gres:shard:20 same=0 err=earlier" {
		t.Errorf("an accepted job changed an earlier plugin's message: %s", got)
	}
	for _, in := range []string{"gres:gpu:mem:abc", "gres:gpu:mem:500g"} {
		first, again := submit(in), submit(in)
		if !strings.HasPrefix(first, "rc=2072 tres_per_node="+in+" same=1 err=") || !strings.Contains(first, in[len("gres:"):]) {
			t.Errorf("submit %q: got %s; want ESLURM_INVALID_GRES (2072), the job untouched and a message quoting it", in, first)
		}
		if again != first {
			t.Errorf("submit %q again:\n got %s\nwant %s", in, again, first)
		}
	}

	// A smaller GPU replaces the H100: once the interval has passed, 60g no longer fits.
	writeFile(t, h.inv, `{"nodes": [{"name": "n1", "partitions": ["gpu"], "gpus": [
 {"index": 0, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034}]}]}`)
	if _, err := io.WriteString(stdin, "sleep 700\n"); err != nil {
		t.Fatal(err)
	}
	if got := submit("gres:gpu:mem:60g"); !strings.HasPrefix(got, "rc=2072 ") {
		t.Errorf("60g after the inventory shrank to one L4: %s; want it refused", got)
	}
	if got := submit("gres:gpu:mem:20g"); got != rewrite {
		t.Errorf("20g on the L4: %s; want %s", got, rewrite)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("harness: %v", err)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// builtPlugins builds both plugins with cgo/build.sh against this machine's slurm.h into
// a temporary folder, or skips the test where that cannot be done.
func builtPlugins(t *testing.T) string {
	t.Helper()
	dir, _ := builtPluginsWith(t, nil, "")
	return dir
}

// builtPluginsWith is builtPlugins with more environment for build.sh and another
// include folder (inc, "" for this machine's); it returns what build.sh said too.
// The plain build (no env, this machine's headers) is made once per test binary and
// copied into each test's folder: every test gets plugins of its own to load, without
// paying for two c-shared links each.
func builtPluginsWith(t *testing.T, env []string, inc string) (string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds two c-shared libraries")
	}
	if _, err := os.Stat("/usr/include/slurm/slurm.h"); err != nil {
		t.Skip("no Slurm headers (libslurm-dev):", err)
	}
	dir := t.TempDir()
	if len(env) > 0 || inc != "" {
		out, err := runBuild(dir, env, inc)
		if err != nil {
			t.Fatalf("build.sh: %v\n%s", err, out)
		}
		return dir, out
	}
	plain.once.Do(func() {
		plain.dir, plain.err = os.MkdirTemp("", "gpumem-shim-plugins")
		if plain.err == nil {
			plain.out, plain.err = runBuild(plain.dir, nil, "")
		}
	})
	if plain.err != nil {
		t.Fatalf("build.sh: %v\n%s", plain.err, plain.out)
	}
	sos, _ := filepath.Glob(filepath.Join(plain.dir, "*.so"))
	for _, so := range sos {
		b, err := os.ReadFile(so)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(so)), b, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir, plain.out
}

// plain is the one plain build of the plugins (builtPluginsWith), removed by TestMain.
var plain struct {
	once     sync.Once
	dir, out string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if plain.dir != "" {
		os.RemoveAll(plain.dir)
	}
	os.Exit(code)
}

// runBuild runs cgo/build.sh into dir, with env and the include folder inc ("" for
// this machine's), and returns what it said.
func runBuild(dir string, env []string, inc string) (string, error) {
	args := []string{dir}
	if inc != "" {
		args = append(args, inc)
	}
	cmd := exec.Command("../build.sh", args...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// harness is a stand-in Slurm program from testdata/NAME_harness.c with the plugins
// built beside it, over a one-H100 inventory and a gpumem.conf of its own. built is what
// build.sh said; local, where the plugins were built with SLURM_SOURCE, the folder of
// the gpumem_jobrec_local.h they were built with.
type harness struct {
	dir, bin, inv, conf string
	built, local        string
}

func newHarness(t *testing.T, name, conf string) *harness {
	t.Helper()
	h := newHarnessBuilt(t, conf, nil, "")
	if name == "" {
		return h
	}
	h.bin = filepath.Join(h.dir, name)
	src := "testdata/" + name + "_harness.c"
	if b, err := exec.Command("gcc", "-O2", "-Wall", "-rdynamic", "-o", h.bin, src, "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, b)
	}
	return h
}

// newHarnessBuilt is newHarness's plugins, inventory and configuration, the plugins
// built with env and inc (see builtPluginsWith), and no harness program.
func newHarnessBuilt(t *testing.T, conf string, env []string, inc string) *harness {
	t.Helper()
	dir, built := builtPluginsWith(t, env, inc)
	h := &harness{dir: dir, inv: filepath.Join(dir, "inventory.json"), conf: filepath.Join(dir, "gpumem.conf"), built: built}
	for _, e := range env {
		if src, ok := strings.CutPrefix(e, "SLURM_SOURCE="); ok {
			h.local = t.TempDir()
			b, err := exec.Command("../jobrec-offsets.sh", "--one", src).Output()
			if err != nil {
				t.Fatalf("jobrec-offsets.sh --one %s: %v", src, err)
			}
			writeFile(t, filepath.Join(h.local, "gpumem_jobrec_local.h"), string(b))
		}
	}
	writeFile(t, h.inv, `{"nodes": [{"name": "n1", "partitions": ["gpu"], "gpus": [
 {"index": 0, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559}]}]}`)
	writeFile(t, filepath.Join(dir, "slurm.conf"), "PartitionName=gpu Nodes=n1 Default=YES\n")
	writeFile(t, h.conf, "InventoryPath = "+h.inv+"\nSlurmConf = "+filepath.Join(dir, "slurm.conf")+"\nRefusalCounts = "+filepath.Join(dir, "refusals.json")+"\n"+conf)
	return h
}

// command runs the harness on the plugin library so, with the harness's gpumem.conf.
func (h *harness) command(so string) *exec.Cmd {
	cmd := exec.Command(h.bin, filepath.Join(h.dir, so))
	cmd.Env = append(os.Environ(), "GPUMEM_CONF="+h.conf)
	return cmd
}

// TestJobSubmitShimPinsShardJobs: with ShardTypes = per-gpu the shim sends plain shard
// jobs to Go too, never answers them from its memo (the same request lands on another
// GPU once the first is full), and writes the required node back into Slurm's job.
func TestJobSubmitShimPinsShardJobs(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "usage.json")
	h := newHarness(t, "submit", "LogLevel = error\nShardTypes = per-gpu\nPinPolicy = best-fit\nUsageSnapshot = "+snap+"\n")
	writeFile(t, filepath.Join(h.dir, "slurm.conf"), "NodeName=n1 Gres=gpu:h100_g0:1,shard:h100_g0:79\nPartitionName=gpu Nodes=n1 Default=YES\n")
	writeFile(t, snap, `{"taken": "`+time.Now().UTC().Format(time.RFC3339)+`", "gpus": [{"node": "n1", "gpu": 0, "shards": 9}]}`)
	cmd := h.command("job_submit_gpumem.so")
	cmd.Stdin = strings.NewReader("gres/shard:20\ngres/shard:20 exc=n2\ngres/shard:20 features=a100\ngres/shard:20 nodes=2\n" +
		"gres/shard:20 het=0\ngres/shard:20 nodes=1\ngres/gpu:mem:20g\ngres/shard:20\ngres/gpu:1\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness: %v\n%s", err, out)
	}
	want := "rc=0 tres_per_node=gres/shard:h100_g0:20 same=0 err= req_nodes=n1\n" +
		// A job that narrows its nodes itself, spans several, or is a hetjob component
		// is left to Slurm: the shim hands Go the shape, Go decides.
		"rc=0 tres_per_node=gres/shard:20 same=1 err=\n" +
		"rc=0 tres_per_node=gres/shard:20 same=1 err=\n" +
		"rc=0 tres_per_node=gres/shard:20 same=1 err=\n" +
		"rc=0 tres_per_node=gres/shard:20 same=1 err=\n" +
		"rc=0 tres_per_node=gres/shard:h100_g0:20 same=0 err= req_nodes=n1\n" +
		"rc=0 tres_per_node=gres/shard:h100_g0:20 same=0 err= req_nodes=n1\n" +
		"rc=0 tres_per_node=gres/shard:20 same=1 err=\n" + // 79 - 9 - 60: 10 left
		"rc=0 tres_per_node=gres/gpu:1 same=1 err=\n"
	if string(out) != want {
		t.Errorf("got:\n%swant:\n%s", out, want)
	}
}

// TestJobSubmitShimFollowsHetComponents: through the built .so, job_submit decides a
// hetjob's components in the order slurmctld sends them on one thread. With one H100,
// two 60g components can never both run: the second is refused, while the same
// component alone (a new job, offset 0) and a plain 60g job, answered before from the
// memo, are accepted.
func TestJobSubmitShimFollowsHetComponents(t *testing.T) {
	h := newHarness(t, "submit", "LogLevel = error\n")
	cmd := h.command("job_submit_gpumem.so")
	cmd.Stdin = strings.NewReader("gres:gpu:mem:60g\ngres:gpu:mem:60g het=0\ngres:gpu:mem:60g het=1\ngres:gpu:mem:60g het=0\ngres:gpu:mem:60g\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != 5 {
		t.Fatalf("harness printed %d answers, want 5:\n%s", len(got), out)
	}
	for i, ok := range []bool{true, true, false, true, true} {
		if accepted := strings.HasPrefix(got[i], "rc=0 tres_per_node=gres:shard:60 "); accepted != ok {
			t.Errorf("answer %d: %s; want accepted=%v", i, got[i], ok)
		}
	}
	if !strings.Contains(got[2], "heterogeneous job") {
		t.Errorf("second 60g component: %s; want the hetjob refusal", got[2])
	}
}

// TestJobSubmitShimReadsGPUOptions: through the built .so, job_submit reads --exclusive
// and --mem-per-gpu from Slurm's job and gives such a job a whole GPU, never shards
// (Slurm counts a shard as no GPU); the memo keeps them apart from the same GRES alone.
func TestJobSubmitShimReadsGPUOptions(t *testing.T) {
	h := newHarness(t, "submit", "LogLevel = error\n")
	cmd := h.command("job_submit_gpumem.so")
	cmd.Stdin = strings.NewReader("gres:gpu:mem:20g\ngres:gpu:mem:20g exclusive\ngres:gpu:mem:20g mem_per_tres=gres:gpu:2048\ngres:gpu:mem:20g\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	want := "rc=0 tres_per_node=gres:shard:20 same=0 err=\n" +
		"rc=0 tres_per_node=gres:gpu:h100:1 same=0 err=\n" +
		"rc=0 tres_per_node=gres:gpu:h100:1 same=0 err=\n" +
		"rc=0 tres_per_node=gres:shard:20 same=0 err=\n"
	if string(out) != want {
		t.Errorf("got:\n%swant:\n%s", out, want)
	}
}
