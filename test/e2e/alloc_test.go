//go:build e2e

package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// device is one GPU (or MIG instance) of a lab node as gres.conf declares it.
type device struct {
	node, typ, file string // file: File=, or MultipleFiles= for a MIG instance
}

// labGres is the lab's gres.conf, per node in file order: Slurm's IDX numbers count the
// records of one name on one node in that order.
type labGres struct {
	gpus   map[string][]device
	shards map[string][]device
	count  map[string]map[string]int64 // node -> file -> shard count
}

func readGres(t testing.TB) labGres {
	t.Helper()
	b, err := os.ReadFile(ctldConf("gres.conf"))
	if err != nil {
		t.Fatal(err)
	}
	g := labGres{gpus: map[string][]device{}, shards: map[string][]device{}, count: map[string]map[string]int64{}}
	for _, line := range strings.Split(string(b), "\n") {
		kv := map[string]string{}
		for _, f := range strings.Fields(line) {
			if k, v, found := strings.Cut(f, "="); found {
				kv[strings.ToLower(k)] = v
			}
		}
		// A MIG instance is named by all its files: instances share the GPU's.
		file := kv["file"]
		if file == "" {
			file = kv["multiplefiles"]
		}
		d := device{node: kv["nodename"], typ: kv["type"], file: file}
		switch kv["name"] {
		case "gpu":
			g.gpus[d.node] = append(g.gpus[d.node], d)
		case "shard":
			g.shards[d.node] = append(g.shards[d.node], d)
			if g.count[d.node] == nil {
				g.count[d.node] = map[string]int64{}
			}
			g.count[d.node][d.file] = atoi(t, kv["count"])
		}
	}
	if len(g.gpus) == 0 {
		t.Fatalf("no Name=gpu records in the lab's gres.conf:\n%s", b)
	}
	return g
}

// use is what one job holds on one device.
type use struct {
	dev    device
	whole  bool  // a gpu GRES (a whole GPU or a MIG instance)
	shards int64 // shard count, when not whole
}

var (
	gresEntryRE = regexp.MustCompile(`(gpu|shard)(?::([^:(,]+))?:(\d+)\(([^)]*)\)`)
	allocLineRE = regexp.MustCompile(`(?m)^\s*Nodes=(\S+) .*GRES=(\S*)`)
	fieldRE     = func(k string) *regexp.Regexp { return regexp.MustCompile(`\b` + k + `=(\S*)`) }
)

// job is what `scontrol -d show job` says about a job.
type job struct {
	id, state, tresPerNode, node, reason string
	uses                                 []use
}

func showJob(t testing.TB, g labGres, id string) job {
	t.Helper()
	return parseJob(t, g, id, ok(t, "scontrol", "-d", "show", "job", id))
}

// parseJob reads job id from the output of scontrol -d show job.
func parseJob(t testing.TB, g labGres, id, out string) job {
	t.Helper()
	j := job{id: id}
	if m := fieldRE("JobState").FindStringSubmatch(out); m != nil {
		j.state = m[1]
	}
	if m := fieldRE("Reason").FindStringSubmatch(out); m != nil {
		j.reason = m[1]
	}
	if m := fieldRE("TresPerNode").FindStringSubmatch(out); m != nil {
		j.tresPerNode = m[1]
	}
	for _, m := range allocLineRE.FindAllStringSubmatch(out, -1) {
		j.node = m[1]
		for _, e := range gresEntryRE.FindAllStringSubmatch(m[2], -1) {
			j.uses = append(j.uses, parseUse(t, g, m[1], e[1], atoi(t, e[3]), e[4])...)
		}
	}
	return j
}

// parseUse reads one GRES entry's detail: "IDX:0", "IDX:0-1,3" (22.05 and gpus on
// 24.11) or "30/79,0/79" (shards per GPU on 24.11).
func parseUse(t testing.TB, g labGres, node, name string, count int64, detail string) []use {
	t.Helper()
	recs := g.gpus[node]
	if name == "shard" {
		recs = g.shards[node]
	}
	at := func(i int) device {
		if i < 0 || i >= len(recs) {
			t.Fatalf("node %s has no %s record %d in gres.conf (detail %q)", node, name, i, detail)
		}
		return recs[i]
	}
	var us []use
	if idx, found := strings.CutPrefix(detail, "IDX:"); found {
		if idx == "" || count == 0 {
			// Seen on 22.05 with MIG instances: the job "has" gpu:TYPE:0 and no device.
			t.Errorf("node %s: Slurm allocated %s with count %d and no device (IDX:%s)", node, name, count, idx)
			return nil
		}
		for _, i := range expandList(t, idx) {
			us = append(us, use{dev: at(i), whole: name == "gpu", shards: count})
		}
		if name == "shard" && len(us) != 1 {
			t.Fatalf("shards of one job on %d GPUs of %s (%q): the lab expects one", len(us), node, detail)
		}
		return us
	}
	for i, part := range strings.Split(detail, ",") {
		used, _, _ := strings.Cut(part, "/")
		if n := atoi(t, used); n > 0 {
			us = append(us, use{dev: at(i), shards: n})
		}
	}
	return us
}

func expandList(t testing.TB, s string) []int {
	t.Helper()
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a := int(atoi(t, lo))
		b := a
		if isRange {
			b = int(atoi(t, hi))
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out
}

// checkNoOvercommit fails when the running jobs together hold more of any GPU than it
// has: more shards than its count, a whole GPU twice, or a GPU both whole and sliced.
func checkNoOvercommit(t testing.TB, g labGres, jobs []job) {
	t.Helper()
	shards := map[device]int64{}
	whole := map[device][]string{}
	sliced := map[device][]string{}
	for _, j := range jobs {
		for _, u := range j.uses {
			key := device{node: u.dev.node, file: u.dev.file}
			if u.whole {
				whole[key] = append(whole[key], j.id)
				continue
			}
			shards[key] += u.shards
			sliced[key] = append(sliced[key], j.id)
		}
	}
	for d, n := range shards {
		c, known := fakeShardCap(t, d.node, d.file) // what the GPU has, not what gres.conf says
		if !known {
			t.Errorf("%s %s: shards on a device the node's fake GPUs do not have", d.node, d.file)
			continue
		}
		if n > c {
			t.Errorf("%s %s: running jobs %v hold %d shards of the %d its GPU has (gres.conf says %d)", d.node, d.file, sliced[d], n, c, g.count[d.node][d.file])
		}
	}
	for d, ids := range whole {
		if len(ids) > 1 {
			t.Errorf("%s %s: one GPU given whole to several jobs %v", d.node, d.file, ids)
		}
		if ids2 := sliced[d]; len(ids2) > 0 {
			t.Errorf("%s %s: whole to %v and sliced to %v at once", d.node, d.file, ids, ids2)
		}
	}
}
