//go:build e2e

package e2e

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/request"
)

// fuzzCase is one --gres value and what must happen to it: valid ones are accepted,
// invalid ones refused; wild ones may go either way but must not hurt slurmctld.
type fuzzCase struct {
	gres string
	want string // "accept", "refuse" or "any"
}

func fuzzCases(r *rand.Rand, n int) []fuzzCase {
	units := []string{"g", "G", "gib", "GiB"}
	junk := "gpu:mem0123456789kmgtibKMGTB.,-+/ :;=%*()#éü\x01\x7f"
	cs := make([]fuzzCase, 0, n)
	for len(cs) < n {
		switch k := r.Intn(10); {
		case k < 3: // sizes the largest lab GPU holds, in every unit form
			if r.Intn(2) == 0 {
				cs = append(cs, fuzzCase{fmt.Sprintf("gpu:mem:%d%s", 1+r.Intn(79), units[r.Intn(len(units))]), "accept"})
			} else {
				cs = append(cs, fuzzCase{fmt.Sprintf("gpu:mem:%dm", 100+r.Intn(80000)), "accept"})
			}
		case k < 5: // sizes that can never fit or are not sizes
			bad := []string{
				fmt.Sprintf("%dg", 80+r.Intn(1<<20)),
				fmt.Sprintf("-%dg", r.Intn(100)),
				"0", "0g", "0m", "",
				strconv.FormatUint(r.Uint64(), 10) + "t",
				strings.Repeat("9", 25+r.Intn(20)) + "g",
				fmt.Sprintf("%dx", r.Intn(100)),
				"abc", "1e3g", "nan", "inf", "0x20g",
			}
			cs = append(cs, fuzzCase{"gpu:mem:" + bad[r.Intn(len(bad))], "refuse"})
		default: // bytes around the grammar: anything may happen except harm
			var b strings.Builder
			if r.Intn(2) == 0 {
				b.WriteString("gpu:mem:")
			}
			l := r.Intn(40)
			if r.Intn(50) == 0 {
				l = 2000 + r.Intn(3000)
			}
			for i := 0; i < l; i++ {
				b.WriteByte(junk[r.Intn(len(junk))])
			}
			cs = append(cs, fuzzCase{b.String(), "any"})
		}
	}
	return cs
}

func fuzzSeed(t *testing.T) int64 {
	if s := os.Getenv("GPUMEM_FUZZ_SEED"); s != "" {
		return atoi(t, s)
	}
	return time.Now().UnixNano()
}

// TestFuzzedSubmissions: 10,000 --gres strings straight into slurmctld through libslurm
// (the job_submit plugin), then a few hundred through sbatch (cli_filter too). Afterwards
// slurmctld is alive, every accepted job is native GRES, and valid jobs run.
func TestFuzzedSubmissions(t *testing.T) {
	clean(t)
	n := 10000
	if s := os.Getenv("GPUMEM_FUZZ_N"); s != "" {
		n = int(atoi(t, s))
	}
	seed := fuzzSeed(t)
	t.Logf("seed %d (GPUMEM_FUZZ_SEED=%d reproduces), %d submissions", seed, seed, n)
	r := rand.New(rand.NewSource(seed))
	cases := fuzzCases(r, n)

	submitter := submitterPath(t)
	// Four submitters, each a quarter of the cases in order, so that slurmctld's
	// threads call job_submit at once, as users' submissions do.
	const submitters = 4
	out := make([][]string, submitters)
	start := time.Now()
	var wg sync.WaitGroup
	for k := 0; k < submitters; k++ {
		var in strings.Builder
		for _, c := range cases[k*len(cases)/submitters : (k+1)*len(cases)/submitters] {
			// The submitter reads lines, so a case can hold anything but a newline.
			in.WriteString(tresPrefix() + c.gres + "\n")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := slurm(t, 10*time.Minute, in.String(), submitter, "--lines")
			out[k] = strings.Split(strings.TrimRight(res.out, "\n"), "\n")
			if res.code != 0 {
				t.Errorf("submitter %d exited %d:\n%s", k, res.code, tail(res.err))
			}
		}()
	}
	wg.Wait()
	var lines []string
	for _, o := range out {
		lines = append(lines, o...)
	}
	if len(lines) != len(cases) {
		t.Fatalf("the submitters answered %d of %d lines; slurmctld may be down", len(lines), len(cases))
	}
	t.Logf("%d submissions in %v", n, time.Since(start).Round(time.Millisecond))
	accepted := map[string]fuzzCase{}
	var validIDs []string
	var counts [2]int
	for i, l := range lines {
		c := cases[i]
		okLine := strings.HasPrefix(l, "ok ")
		if okLine {
			counts[0]++
			id := strings.TrimPrefix(l, "ok ")
			accepted[id] = c
			if c.want == "accept" {
				validIDs = append(validIDs, id)
			}
		} else {
			counts[1]++
		}
		switch {
		case c.want == "accept" && !okLine:
			t.Errorf("valid %q refused: %s", c.gres, l)
		case c.want == "refuse" && okLine:
			t.Errorf("invalid %q accepted as job %s", c.gres, strings.TrimPrefix(l, "ok "))
		}
	}
	t.Logf("%d accepted, %d refused", counts[0], counts[1])
	alive(t)

	// Every accepted job is held with native GRES: no gpu:mem left for Slurm to choke on;
	// a valid one with GPUs that hold at least the memory it asked.
	queued := ok(t, "squeue", "-h", "-t", "pending", "-o", "%i|%b")
	dev := deviceMiB(t)
	nq := 0
	for _, l := range strings.Split(strings.TrimSpace(queued), "\n") {
		id, tres, _ := strings.Cut(l, "|")
		if id == "" {
			continue
		}
		nq++
		if strings.Contains(tres, "gpu:mem") {
			t.Errorf("job %s (from %q) kept %s", id, accepted[id].gres, tres)
		}
		if c := accepted[id]; c.want == "accept" {
			want, err := request.ParseSize(strings.TrimPrefix(c.gres, "gpu:mem:"))
			if got, terr := translatedMiB(tres, dev); err != nil || terr != nil || got < want {
				t.Errorf("job %s: valid %q became %s (%d MiB per GPU of %d asked; %v %v)", id, c.gres, tres, got, want, err, terr)
			}
		}
	}
	if nq != counts[0] {
		t.Errorf("%d jobs queued, %d accepted", nq, counts[0])
	}

	cliFuzz(t, r)
	alive(t)

	// Valid jobs, released, run to completion: each ends COMPLETED 0:0 (a job that
	// left the queue any other way did not run).
	release := validIDs
	if len(release) > 20 {
		release = release[:20]
	}
	if len(release) == 0 {
		t.Fatalf("no valid job accepted out of %d submissions", n)
	}
	ok(t, append([]string{"scontrol", "release"}, release...)...)
	want := map[string]bool{}
	for _, id := range release {
		want[id] = true
	}
	ended := map[string]jobEnd{}
	for deadline := time.Now().Add(2 * time.Minute); len(ended) < len(want); time.Sleep(time.Second) {
		recordEnds(t, want, ended)
		if time.Now().After(deadline) {
			break
		}
	}
	accountedEnds(t, want, ended)
	for _, id := range release {
		switch e, known := ended[id]; {
		case !known:
			t.Errorf("released valid job %s (%q) did not end within 2 minutes", id, accepted[id].gres)
		case e.state != "COMPLETED" || e.exit != "0:0":
			t.Errorf("released valid job %s (%q) ended %s, exit code %s; want COMPLETED 0:0", id, accepted[id].gres, e.state, e.exit)
		}
	}
	clean(t)
	if r := slurm(t, 60*time.Second, "", "srun", "--gres=gpu:mem:20g", "true"); r.code != 0 {
		t.Fatalf("after the fuzzing, srun --gres=gpu:mem:20g fails: %s", r)
	}
}

// cliFuzz sends fuzzed --gres through sbatch, so cli_filter sees them first. Four
// sbatch run at a time, as users' do: each spends most of its time waiting for
// slurmctld, and one at a time they took a third of the test.
func cliFuzz(t *testing.T, r *rand.Rand) {
	t.Helper()
	cases := make(chan fuzzCase)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// slurm's t.Fatalf ends only this goroutine: the rest of the cases must not
			// wait for it.
			defer func() {
				for range cases {
				}
			}()
			for c := range cases {
				res := slurm(t, 30*time.Second, "", "sbatch", "--hold", "--output=/dev/null", "--gres="+c.gres, "--wrap", "true")
				if res.code != 0 && res.code != 1 {
					t.Errorf("sbatch --gres=%q exited %d (a crash?): %s", c.gres, res.code, tail(res.err))
				}
				if c.want == "accept" && res.code != 0 {
					t.Errorf("sbatch --gres=%q refused: %s", c.gres, tail(res.err))
				}
				if c.want == "refuse" && res.code == 0 {
					t.Errorf("sbatch --gres=%q accepted: %s", c.gres, res.out)
				}
			}
		}()
	}
	for _, c := range fuzzCases(r, 300) {
		if !strings.ContainsAny(c.gres, "\x00") {
			cases <- c
		}
	}
	close(cases)
	wg.Wait()
}

func alive(t *testing.T) {
	t.Helper()
	if r := slurm(t, 30*time.Second, "", "scontrol", "ping"); r.code != 0 || !strings.Contains(r.out, "UP") {
		t.Fatalf("slurmctld is not answering: %s", r)
	}
}

// submitterPath builds the libslurm submitter for this lab (see test/bench/submit.c).
func submitterPath(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("../lab/lab.sh", "submitter")
	cmd.Env = append(os.Environ(), "LAB_SLURM="+release)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("building the submitter: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func tail(s string) string {
	if len(s) > 600 {
		return "..." + s[len(s)-600:]
	}
	return s
}
