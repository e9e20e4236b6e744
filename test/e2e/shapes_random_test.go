//go:build e2e

package e2e

import (
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/mig"
)

// shapeReq is one generated submission: sbatch options per hetjob component, the
// gpu:mem size of each component in GiB, and the size of a step the batch script runs
// (0: none).
type shapeReq struct {
	comps [][]string
	sizes []int
	step  int
}

// single says the request is one plain job: not an array, not a hetjob.
func (s shapeReq) single() bool {
	return len(s.comps) == 1 && !slices.ContainsFunc(s.comps[0], func(o string) bool { return strings.HasPrefix(o, "--array=") })
}

func (s shapeReq) args() []string {
	var a []string
	for i, c := range s.comps {
		if i > 0 {
			a = append(a, ":")
		}
		a = append(a, c...)
	}
	wrap := "true"
	if s.step > 0 {
		wrap = fmt.Sprintf("srun --gres=gpu:mem:%dg true", s.step)
	}
	return append(a, "--wrap", wrap)
}

// randomShapes mixes sizes, node counts, node lists, exclusions, features, partitions,
// GPU counts, arrays, hetjob components and steps, valid and not.
func randomShapes(r *rand.Rand, n int) []shapeReq {
	sizes := []int{1, 3, 4, 5, 7, 10, 15, 19, 22, 30, 40, 60, 79, 90}
	pick := func(xs ...string) string { return xs[r.Intn(len(xs))] }
	comp := func() ([]string, int) {
		size := sizes[r.Intn(len(sizes))]
		c := []string{fmt.Sprintf("--gres=gpu:mem:%dg", size)}
		if p := pick("", "", "train", "inference", "gpu,inference", "train,inference"); p != "" {
			c = append(c, "-p", p)
		}
		if w := pick("", "", "", "n1", "n2", "n3", "n[1,3]"); w != "" {
			c = append(c, "-w", w)
		}
		if x := pick("", "", "", "n1", "n2", "n3"); x != "" {
			c = append(c, "-x", x)
		}
		if f := pick("", "", "", "l4", "h100|l4", "mig", "a100&mig"); f != "" {
			c = append(c, "-C", f)
		}
		if nodes := pick("", "", "", "2"); nodes != "" {
			c = append(c, "-N", nodes)
		}
		if r.Intn(5) == 0 {
			c = append(c, "--gpus-per-node=2")
		}
		return c, size
	}
	out := make([]shapeReq, 0, n)
	for len(out) < n {
		c, size := comp()
		s := shapeReq{comps: [][]string{c}, sizes: []int{size}}
		switch k := r.Intn(10); {
		case k == 0: // a heterogeneous job
			c2, size2 := comp()
			s.comps, s.sizes = append(s.comps, c2), append(s.sizes, size2)
		case k < 3:
			s.comps[0] = append(s.comps[0], "--array="+pick("0-3", "0-9%3", "0-5"))
		case k < 6:
			s.step = 1 + r.Intn(size)
		}
		out = append(out, s)
	}
	return out
}

var jobIDRE = regexp.MustCompile(`Submitted batch job (\d+)`)

// minAcceptedShare is the floor under TestRandomShapes' accepted requests, in percent:
// 28 to 33 of every 100 were accepted on every release when it was written, so a plugin
// that refused what the lab can run would pass the rest of the test unnoticed without it.
const minAcceptedShare = 15

// deviceMiB is the memory of each GRES type a translation may name in the lab, from its
// fake GPUs (test/lab/nodes): n1's H100s, n3's L4s, and every MIG profile of n2's A100
// (whichever layout a MIG test left).
func deviceMiB(t *testing.T) map[string]int64 {
	t.Helper()
	m := map[string]int64{"l4": 23034}
	for _, key := range []string{"h100-80gb", "a100-40gb"} {
		model, err := mig.Lookup(key)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range model.Profiles {
			m[p.Name] = p.MiB
		}
		if key == "h100-80gb" {
			m["h100"] = model.MemoryMiB
		}
	}
	return m
}

// translatedMiB is the memory per GPU that a translated TresPerNode gives ("gres:shard:7",
// "gres/gpu:3g.20gb:1", "gres:gpu:h100:2"), or an error when it is no translation.
func translatedMiB(tres string, dev map[string]int64) (int64, error) {
	var mib int64
	for _, e := range strings.Split(tres, ",") {
		e = strings.TrimPrefix(strings.TrimPrefix(e, "gres:"), "gres/")
		f := strings.Split(e, ":")
		switch {
		case strings.Contains(e, "mem"):
			return 0, fmt.Errorf("%s is not translated", tres)
		case f[0] == "shard" && len(f) == 2:
			mib = max(mib, atoiOr(f[1])<<10) // the lab's shard is 1 GiB
		case f[0] == "gpu" && len(f) == 3 && dev[f[1]] > 0:
			mib = max(mib, dev[f[1]])
		default:
			return 0, fmt.Errorf("%s names no device of known size (entry %q)", tres, e)
		}
	}
	if mib == 0 {
		return 0, fmt.Errorf("TresPerNode %q holds no GPU", tres)
	}
	return mib, nil
}

func atoiOr(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// TestRandomShapes: a few hundred generated requests. Each is refused at submit, or
// accepted and then runs to completion within the horizon (its step, when it has one,
// succeeding): an accepted job that can never start would still pend when nothing else
// runs. GPUMEM_SHAPE_N sets the count, GPUMEM_FUZZ_SEED the seed.
func TestRandomShapes(t *testing.T) {
	clean(t)
	n := 200
	if s := os.Getenv("GPUMEM_SHAPE_N"); s != "" {
		n = int(atoi(t, s))
	}
	seed := fuzzSeed(t)
	dev := deviceMiB(t)
	t.Logf("seed %d (GPUMEM_FUZZ_SEED=%d reproduces), %d requests", seed, seed, n)
	reqs := randomShapes(rand.New(rand.NewSource(seed)), n)
	var mu sync.Mutex
	accepted := map[string]shapeReq{}
	// Refusals by who refused: gpumem (its messages start with "gpumem") or Slurm.
	byGpumem, bySlurm := map[string]int{}, map[string]int{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, q := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func(q shapeReq) {
			defer wg.Done()
			defer func() { <-sem }()
			r := slurm(t, 30*time.Second, "", append([]string{"sbatch", "--output=/dev/null"}, q.args()...)...)
			mu.Lock()
			defer mu.Unlock()
			if r.code != 0 {
				if refusedByGpumem(r.err) {
					byGpumem[refusalKind(r.err)]++
				} else {
					bySlurm[refusalKind(r.err)]++
				}
				if strings.Contains(r.err, "internal error") || strings.Contains(r.err, "tres_per") {
					t.Errorf("sbatch %s: %s", strings.Join(q.args(), " "), r.err)
				}
				if r.took > 5*time.Second {
					t.Errorf("sbatch %s: refused only after %v", strings.Join(q.args(), " "), r.took)
				}
				return
			}
			m := jobIDRE.FindStringSubmatch(r.out)
			if m == nil {
				t.Errorf("sbatch %s: no job id in %q", strings.Join(q.args(), " "), r.out)
				return
			}
			accepted[m[1]] = q
			// What Slurm holds must give each component at least the memory it asked.
			mu.Unlock()
			show := slurm(t, 30*time.Second, "", "scontrol", "show", "-o", "job", m[1])
			mu.Lock()
			if show.code != 0 {
				return // ended and purged already: nothing to compare
			}
			comps := map[string]string{} // hetjob offset ("" for a plain job) -> TresPerNode
			for _, l := range strings.Split(strings.TrimSpace(show.out), "\n") {
				off := ""
				if o := fieldRE("HetJobOffset").FindStringSubmatch(l); o != nil {
					off = o[1]
				}
				if tr := fieldRE("TresPerNode").FindStringSubmatch(l); tr != nil {
					comps[off] = tr[1]
				}
			}
			for i, size := range q.sizes {
				off := ""
				if len(q.sizes) > 1 {
					off = strconv.Itoa(i)
				}
				tres, found := comps[off]
				if !found {
					t.Errorf("job %s (sbatch %s): component %d has no TresPerNode in:\n%s", m[1], strings.Join(q.args(), " "), i, show.out)
					continue
				}
				if got, err := translatedMiB(tres, dev); err != nil || got < int64(size)<<10 {
					t.Errorf("job %s (sbatch %s): gpu:mem:%dg became %s (%d MiB per GPU, %v)", m[1], strings.Join(q.args(), " "), size, tres, got, err)
				}
			}
		}(q)
	}
	wg.Wait()
	t.Logf("%d accepted, %d refused by gpumem at submit %v, %d refused by Slurm %v",
		len(accepted), total(byGpumem), byGpumem, total(bySlurm), bySlurm)
	if floor := n * minAcceptedShare / 100; len(accepted) < floor {
		t.Errorf("only %d of %d requests accepted; at least %d of them fit the lab", len(accepted), n, floor)
	}
	// The plain jobs (no array, no hetjob), with a step or without: each must end
	// COMPLETED with exit 0:0. Slurm forgets a job MinJobAge after it ends, so their ends
	// are read while the queue drains, and what ended between two looks is read from
	// accounting afterwards.
	stepJobs := map[string]bool{}
	for id, q := range accepted {
		if q.single() {
			stepJobs[id] = true
		}
	}
	ended := map[string]jobEnd{}
	// Every accepted job must run. A queue that stops moving with nothing running holds
	// jobs that can never start.
	deadline := time.Now().Add(3 * time.Minute)
	latestHorizon := time.Now().Add(8 * time.Minute)
	var blocked []string // hetjobs taken out of a stalled queue, each to run alone after
	for {
		recordEnds(t, stepJobs, ended)
		out := strings.TrimSpace(ok(t, "squeue", "-h", "-o", "%i %T %r"))
		if out == "" {
			break
		}
		if !strings.Contains(out, "RUNNING") && !strings.Contains(out, "COMPLETING") && strings.Contains(out, "BeginTime") {
			// Nothing runs, and a job waits for a begin time: a hetjob whose start
			// Slurm's backfill had to undo (requeuedUntil). That is a delay, not a job
			// that can never start: it is brought forward as an admin would, and
			// waited for. Bounded: a job requeued again and again is stuck all the same.
			if ids, until := requeuedUntil(t); !until.IsZero() && until.Before(latestHorizon) {
				bringForward(t, ids, until)
				if d := until.Add(time.Minute); d.After(deadline) {
					deadline = d
				}
				time.Sleep(time.Second)
				continue
			}
		}
		if !strings.Contains(out, "RUNNING") && !strings.Contains(out, "COMPLETING") {
			// Nothing runs. Slurm starts a heterogeneous job only from its backfill
			// scheduler (every bf_interval, 30 s by default), and the jobs behind it in
			// its partitions wait with reason Priority until then: so only a queue that
			// stays the same for longer than one backfill pass is stuck.
			again := out
			for stall := time.Now().Add(40 * time.Second); again == out && time.Now().Before(stall); {
				time.Sleep(3 * time.Second)
				recordEnds(t, stepJobs, ended)
				again = strings.TrimSpace(ok(t, "squeue", "-h", "-o", "%i %T %r"))
			}
			if again != "" && !strings.Contains(again, "RUNNING") && !strings.Contains(again, "COMPLETING") && again == out {
				// Hetjobs can hold each other: backfill plans every pending component and
				// each plan holds its nodes until its whole job can start, so two hetjobs
				// that each hold a node the other needs both wait for ever, and every job
				// behind them waits too, each of them able to run alone. That is Slurm's
				// doing, not a translation that cannot run: such hetjobs are cancelled,
				// the rest must then drain, and each of them must start alone afterwards.
				if het := stalledHetjobs(again); len(het) > 0 && len(blocked) < 10 {
					t.Logf("the queue stalled with hetjobs %v pending and nothing running; cancelled, each is run alone after the queue drains", het)
					ok(t, append([]string{"scancel"}, het...)...)
					blocked = append(blocked, het...)
					if d := time.Now().Add(time.Minute); d.After(deadline) && d.Before(latestHorizon) {
						deadline = d
					}
					continue
				}
				for _, l := range strings.Split(again, "\n") {
					id, _, _ := strings.Cut(strings.Fields(l)[0], "_")
					id, _, _ = strings.Cut(id, "+") // a hetjob component: JOBID+OFFSET
					t.Errorf("accepted but never starts (%s): sbatch %s", l, strings.Join(accepted[id].args(), " "))
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("queue still not empty after the horizon:\n%s", out)
			break
		}
		time.Sleep(time.Second)
	}
	for _, id := range blocked {
		if err := runsAlone(t, accepted[id]); err != nil {
			t.Errorf("accepted but never starts, even alone on an idle cluster: sbatch %s: %v", strings.Join(accepted[id].args(), " "), err)
		}
	}
	recordEnds(t, stepJobs, ended)
	seen := len(ended)
	accountedEnds(t, stepJobs, ended)
	// Each plain job, and each step no larger than its job, runs: the job completes
	// with exit 0:0.
	for id := range stepJobs {
		q := accepted[id]
		e, known := ended[id]
		switch {
		case !known:
			t.Errorf("job %s (sbatch %s): neither slurmctld nor accounting knows how it ended", id, strings.Join(q.args(), " "))
		case e.state != "COMPLETED" || e.exit != "0:0":
			t.Errorf("job %s (sbatch %s): ended %s, exit code %s; want COMPLETED 0:0", id, strings.Join(q.args(), " "), e.state, e.exit)
		}
	}
	t.Logf("%d plain jobs, %d of them COMPLETED 0:0 (%d ends seen in slurmctld, %d read from accounting)",
		len(stepJobs), completedOK(ended), seen, len(ended)-seen)
	clean(t)
}

// stalledHetjobs is the job ids of the hetjob components in squeue lines "ID STATE
// REASON", each once.
func stalledHetjobs(queue string) []string {
	var ids []string
	for _, l := range strings.Split(queue, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if id, _, het := strings.Cut(f[0], "+"); het && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// runsAlone submits q again, on a cluster where nothing else is queued, and waits for it
// to start: every component running (or done) within 90 s, or within a minute of the
// begin time Slurm gave it after a start it had to undo.
func runsAlone(t *testing.T, q shapeReq) error {
	t.Helper()
	r := slurm(t, 30*time.Second, "", append([]string{"sbatch", "--output=/dev/null"}, q.args()...)...)
	if r.code != 0 {
		return fmt.Errorf("refused when submitted again: %s", strings.TrimSpace(r.err))
	}
	m := jobIDRE.FindStringSubmatch(r.out)
	if m == nil {
		return fmt.Errorf("no job id in %q", r.out)
	}
	start := time.Now()
	deadline := start.Add(90 * time.Second)
	for {
		p := slurm(t, 30*time.Second, "", "squeue", "-h", "-t", "pending", "-j", m[1], "-o", "%i %r")
		pending := strings.TrimSpace(p.out)
		if p.code != 0 {
			return fmt.Errorf("squeue -j %s: %s", m[1], strings.TrimSpace(p.err))
		}
		if pending == "" {
			// Not pending: it started only if Slurm says it ran (MinJobAge keeps a job
			// that ended in slurmctld's view long after these 90 s).
			show := slurm(t, 30*time.Second, "", "scontrol", "show", "-o", "job", m[1])
			for _, st := range fieldRE("JobState").FindAllStringSubmatch(show.out, -1) {
				if st[1] != "RUNNING" && st[1] != "COMPLETING" && st[1] != "COMPLETED" {
					return fmt.Errorf("job %s left the queue without running: %s", m[1], strings.TrimSpace(show.out+show.err))
				}
			}
			if show.code != 0 || !strings.Contains(show.out, "JobState=") {
				return fmt.Errorf("job %s left the queue and Slurm no longer knows it: %s", m[1], strings.TrimSpace(show.err))
			}
			return nil
		}
		if ids, until := requeuedUntil(t); !until.IsZero() && until.Before(start.Add(5*time.Minute)) {
			bringForward(t, ids, until)
			if until.Add(time.Minute).After(deadline) {
				deadline = until.Add(time.Minute)
			}
		}
		if time.Now().After(deadline) {
			slurm(t, 30*time.Second, "", "scancel", m[1])
			return fmt.Errorf("job %s still pending after %v: %s", m[1], time.Since(start).Round(time.Second), pending)
		}
		time.Sleep(time.Second)
	}
}

// requeuedUntil is the latest begin time of the pending jobs that wait for one (reason
// BeginTime), and those jobs (a hetjob once, by its leader); zero when none waits for
// one still ahead. The random shapes set no begin time, so such a job was requeued by
// Slurm: its backfill starts a hetjob's components one by one, and when one cannot
// start after all (the main scheduler took its node since the plan was made) it
// deallocates the others and requeues the job one credential lifetime (121 s by
// default) ahead. Nothing in gpumem's translation decides that; the job starts later.
func requeuedUntil(t *testing.T) ([]string, time.Time) {
	t.Helper()
	var latest time.Time
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(ok(t, "squeue", "-h", "-t", "pending", "-o", "%r|%S|%i")), "\n") {
		f := strings.Split(l, "|")
		if len(f) != 3 || f[0] != "BeginTime" {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02T15:04:05", f[1], time.Local)
		if err != nil {
			t.Errorf("squeue start time %q: %v", f[1], err)
			continue
		}
		if at.After(latest) {
			latest = at
		}
		if id, _, _ := strings.Cut(f[2], "+"); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	// A begin time already past is no reason to wait: the job should be starting.
	if latest.Before(time.Now()) {
		return nil, time.Time{}
	}
	return ids, latest
}

// bringForward sets the begin time of jobs ids, requeued to wait until until, to now,
// as an admin would; a job that started meanwhile refuses, which is only logged. Not in
// the seconds of the requeue itself, whose begin time is one credential lifetime (121 s)
// on: slurmd takes a credential made in the second it revoked the run's for a revoked
// one (see startAgain), so a requeue under 3 s old is left for the next look.
func bringForward(t *testing.T, ids []string, until time.Time) {
	t.Helper()
	if time.Until(until) > 118*time.Second {
		return
	}
	for _, id := range ids {
		if r := slurm(t, 30*time.Second, "", "scontrol", "update", "jobid="+id, "starttime=now"); r.code != 0 {
			t.Logf("job %s: starttime=now: %s", id, r)
		}
	}
	t.Logf("jobs %v waited for their begin time %s after a requeue: brought forward", ids, until.Format(time.TimeOnly))
}

// jobEnd is how a job ended: its state and exit code, as Slurm prints them.
type jobEnd struct{ state, exit string }

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func completedOK(ended map[string]jobEnd) int {
	n := 0
	for _, e := range ended {
		if e.state == "COMPLETED" && e.exit == "0:0" {
			n++
		}
	}
	return n
}

var (
	jobIDFieldRE = regexp.MustCompile(`(?:^|\s)JobId=(\d+)\s`)
	jobStateRE   = regexp.MustCompile(`(?:^|\s)JobState=(\S+)`)
	exitCodeRE   = regexp.MustCompile(`(?:^|\s)ExitCode=(\S+)`)
)

// recordEnds notes how each of the wanted jobs that slurmctld still knows has ended.
func recordEnds(t *testing.T, want map[string]bool, ended map[string]jobEnd) {
	t.Helper()
	for _, l := range strings.Split(ok(t, "scontrol", "show", "-o", "job"), "\n") {
		id, st, ec := jobIDFieldRE.FindStringSubmatch(l), jobStateRE.FindStringSubmatch(l), exitCodeRE.FindStringSubmatch(l)
		if id == nil || st == nil || ec == nil || !want[id[1]] {
			continue
		}
		switch st[1] {
		case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING":
			continue
		}
		ended[id[1]] = jobEnd{st[1], ec[1]}
	}
}

// accountedEnds reads from slurmdbd how the wanted jobs not yet in ended have ended,
// waiting a little for its records to catch up. A lab without accounting
// (LAB_ACCOUNTING=0) has only what recordEnds saw.
func accountedEnds(t *testing.T, want map[string]bool, ended map[string]jobEnd) {
	t.Helper()
	if !strings.Contains(ok(t, "scontrol", "show", "config"), "accounting_storage/slurmdbd") {
		return
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		var ids []string
		for id := range want {
			if _, known := ended[id]; !known {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return
		}
		for _, l := range strings.Split(ok(t, "sacct", "-X", "-n", "-P", "-j", strings.Join(ids, ","), "-o", "JobID,State,ExitCode"), "\n") {
			f := strings.Split(strings.TrimSpace(l), "|")
			if len(f) != 3 || !want[f[0]] || f[1] == "PENDING" || f[1] == "RUNNING" {
				continue
			}
			// sacct writes "CANCELLED by 0": the state is the first word.
			ended[f[0]] = jobEnd{strings.Fields(f[1])[0], f[2]}
		}
		if time.Now().After(deadline) {
			return
		}
	}
}

// refusedByGpumem tells gpumem's refusals from Slurm's: gpumem's message starts with
// "gpumem" after the command's "sbatch: error: ".
func refusedByGpumem(stderr string) bool {
	for _, l := range strings.Split(stderr, "\n") {
		if m, found := strings.CutPrefix(l, "sbatch: error: "); found && strings.HasPrefix(m, "gpumem") {
			return true
		}
	}
	return false
}

// refusalKind names what refused a submission, for the test's summary.
func refusalKind(stderr string) string {
	for _, k := range []string{"heterogeneous job", "on node", "is not in partition", "both required", "does not have --constraint",
		"fewer than", "the most that fits", "the largest GPU", "has no", "Invalid", "Requested node configuration", "error"} {
		if strings.Contains(stderr, k) {
			return k
		}
	}
	return "other"
}
