//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// TestFenceRequireRoutes proves gpumem.conf's Fence = require on the lab (docs/policy.md,
// "Memory fence"): the lab's fake GPUs report no fence, so a gpu:mem job that would have
// been shards becomes a whole GPU or a MIG instance; once n1's inventory says its H100s
// have driver limits, jobs in train (n1 and the MIG n2) get shards again, while in gpu,
// where n3's unfenced L4s could take a slice of up to 22 GiB, only sizes no L4 holds do.
// Decided the same by job_submit (a client without inventory) and by cli_filter (a client
// reading slurmctld's gpumem.conf). gpumem.conf and n1's inventory file are restored, and
// waited for, when the test ends.
func TestFenceRequireRoutes(t *testing.T) {
	clean(t)
	p := tresPrefix()
	writeNoInv(t)
	small := []string{"-p", "inference", "--gres=gpu:mem:5g"}
	if got := probeJob(t, noInv, small...); got != "inference|"+p+"shard:5" {
		t.Fatalf("with Fence = off, -p inference gpu:mem:5g is %s; want inference|%sshard:5", got, p)
	}
	setCtldConf(t, "Fence = require", small, "inference|"+p+"gpu:l4:1")

	type want struct {
		args       []string
		part, tres string
	}
	check := func(t *testing.T, cases []want) {
		paths := []struct{ name, conf string }{{"job_submit", noInv}}
		if os.Getenv("LAB_CONFIGLESS") != "1" { // there a client reads a login node's gpumem.conf
			paths = append(paths, struct{ name, conf string }{"cli_filter", ""})
		}
		for _, path := range paths {
			t.Run(path.name, func(t *testing.T) {
				for _, c := range cases {
					if got := probeJob(t, path.conf, c.args...); got != c.part+"|"+p+c.tres {
						t.Errorf("%s: %s; want %s|%s%s", strings.Join(c.args, " "), got, c.part, p, c.tres)
					}
				}
			})
		}
	}
	t.Run("no GPU fenced", func(t *testing.T) {
		check(t, []want{
			{small, "inference", "gpu:l4:1"},                                        // the L4s are unfenced: one whole
			{[]string{"-p", "train", "--gres=gpu:mem:4g"}, "train", "gpu:1g.5gb:1"}, // a MIG instance (PreferMIG = yes in the lab)
			{[]string{"-p", "train", "--gres=gpu:mem:20g"}, "train", "gpu:h100:1"},  // no MIG instance holds 20g: a whole H100
		})
	})

	fenceNode(t, "n1", inventory.FenceDriver, []string{"-p", "train", "--gres=gpu:mem:20g"}, "train|"+p+"shard:20")
	t.Run("n1 fenced", func(t *testing.T) {
		check(t, []want{
			{[]string{"-p", "train", "--gres=gpu:mem:20g"}, "train", "shard:20"},
			{[]string{"-p", "gpu", "--gres=gpu:mem:20g"}, "gpu", "gpu:l4:1"}, // an unfenced L4 could take 20 shards
			{[]string{"-p", "gpu", "--gres=gpu:mem:23g"}, "gpu", "shard:23"}, // no L4 holds 23 shards
			{small, "inference", "gpu:l4:1"},
		})
	})

	// The 5g job runs where the fence says: on a whole L4. (A job on n1 is left out: its
	// inventory now says driver, so n1's prolog sets that fence for real and, in this
	// lab without the job's cgroup, fails the job and drains n1 as it must; that path
	// is fence_test.go's, with a cgroup made for it.)
	g := readGres(t)
	for _, c := range []struct{ args, node string }{{"-p inference --gres=gpu:mem:5g", "n3"}} {
		id := sbatch(t, append(strings.Fields(c.args), "--wrap", "sleep 300")...)
		if st := waitState(t, id, "RUNNING", "FAILED", "COMPLETED"); st != "RUNNING" {
			t.Fatalf("%s: %s\n%s", c.args, st, ok(t, "scontrol", "show", "job", id))
		}
		if j := showJob(t, g, id); j.node != c.node {
			t.Errorf("%s ran on %s; want %s", c.args, j.node, c.node)
		}
	}
	clean(t)
}

// probeJob submits a held job with args and returns where it was sent:
// "PARTITION|TRES". conf is the client's gpumem.conf ("": the environment's own).
func probeJob(t *testing.T, conf string, args ...string) string {
	t.Helper()
	cmd := []string{"sbatch", "--output=/dev/null", "--hold"}
	if conf != "" {
		cmd = append([]string{"env", "GPUMEM_CONF=" + conf}, cmd...)
	}
	out := ok(t, append(cmd, append(args, "--wrap", "true")...)...)
	m := submittedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("sbatch: no job id in %q", out)
	}
	defer ok(t, "scancel", m[1])
	return partTRES(t, m[1])
}

// awaitProbe waits until a job with args, submitted from a client without inventory (so
// that job_submit decides), lands as want.
func awaitProbe(t *testing.T, what string, args []string, want string) {
	t.Helper()
	var got string
	if !eventually(4*labReloadInterval+5*time.Second, func() bool { got = probeJob(t, noInv, args...); return got == want }) {
		t.Fatalf("job_submit did not pick up %s: %s is %s, want %s", what, strings.Join(args, " "), got, want)
	}
}

// replaceFile writes b to path through a dotted name in its directory and a rename, so
// that no reader sees half of it (the inventory directory ignores dotted names).
func replaceFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".fence-test-"+filepath.Base(path))
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// setCtldConf adds line to slurmctld's gpumem.conf and waits until a job with args lands
// as want; the file as it was comes back, and is waited for, when the test ends.
func setCtldConf(t *testing.T, line string, args []string, want string) {
	t.Helper()
	conf := ctldConf("gpumem.conf")
	old, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	key, _, _ := strings.Cut(line, " ")
	if regexp.MustCompile(`(?im)^\s*` + key + `\s*=`).Match(old) {
		t.Fatalf("%s already sets %s; this test wants the lab's own file", conf, key)
	}
	before := probeJob(t, noInv, args...)
	t.Cleanup(func() {
		clean(t)
		replaceFile(t, conf, old)
		awaitProbe(t, conf+" restored", args, before)
	})
	replaceFile(t, conf, append(old, []byte(line+"\n")...))
	awaitProbe(t, line, args, want)
}

// fenceNode sets the fence of every GPU of node in slurmctld's inventory, as gpumemd
// writes it where it finds one, and waits until a job with args lands as want; the
// file as it was comes back when the test ends.
func fenceNode(t *testing.T, node, fence string, args []string, want string) {
	t.Helper()
	path := ctldConf(filepath.Join("gpumem.d", node+".json"))
	was, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := inventory.Decode(was)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Nodes {
		for j := range c.Nodes[i].GPUs {
			c.Nodes[i].GPUs[j].Fence = fence
		}
	}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	before := probeJob(t, noInv, args...)
	t.Cleanup(func() {
		if cur, _ := os.ReadFile(path); !bytes.Equal(cur, was) {
			clean(t)
			replaceFile(t, path, was)
			awaitProbe(t, path+" restored", args, before)
		}
	})
	replaceFile(t, path, b)
	awaitProbe(t, path, args, want)
}
