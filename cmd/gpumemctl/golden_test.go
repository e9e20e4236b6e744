package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/usage"
)

// update rewrites the golden files from what the commands print now:
// go test ./cmd/gpumemctl -run Golden -update, then review the diff.
var update = flag.Bool("update", false, "rewrite testdata/golden from the commands' output")

// golden compares got with testdata/golden/name (or writes it with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run Golden -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from what the command printed (go test -run Golden -update rewrites it; review the diff):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// labNodes are the lab's fake-NVML nodes (test/lab/nodes): two H100s, a MIG A100 and
// four L4s.
var labNodes = []string{"n1", "n2", "n3"}

// labInventory writes the lab nodes' inventories, as gpumemctl inventory reads them
// from their fake NVML, into a directory of NODE.json, and returns it.
func labInventory(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range labNodes {
		out, err := run(t, "inventory", "--nvml=fake:../../test/lab/nodes/"+n+".json", "--node", n, "-o", "json")
		if err != nil {
			t.Fatalf("inventory of %s: %v\n%s", n, err, out)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".json"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// formats runs args once per output format and compares each with its golden file
// name.FORMAT; mask, when not nil, replaces what differs between runs first.
func formats(t *testing.T, name string, mask func(string) string, args []string, fs ...string) {
	t.Helper()
	formatsExiting(t, 0, name, mask, args, fs...)
}

// formatsExiting is formats for a command whose status on these inputs is code.
func formatsExiting(t *testing.T, code int, name string, mask func(string) string, args []string, fs ...string) {
	t.Helper()
	for _, f := range fs {
		out, err := run(t, append(args, "-o", f)...)
		if got, msg := exitCode(err); got != code {
			t.Fatalf("gpumemctl %s -o %s: status %d (%v), want %d\n%s", strings.Join(args, " "), f, got, msg, code, out)
		}
		if mask != nil {
			out = mask(out)
		}
		golden(t, name+"."+f, out)
	}
}

func TestGoldenInventory(t *testing.T) {
	formats(t, "inventory", nil, []string{"inventory", "--inventory", labInventory(t)}, formatTable, formatJSON)
}

// TestGoldenGres: what gres generate and node-line write for the lab's nodes, per Slurm
// release whose gres.conf forms differ (22.05 splits a MIG instance's files).
func TestGoldenGres(t *testing.T) {
	inv := labInventory(t)
	for _, rel := range []string{"22.05.8", "24.11"} {
		for _, c := range [][]string{{"gres", "generate"}, {"gres", "node-line"}} {
			out, err := run(t, append(c, "--inventory", inv, "--slurm-version", rel)...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", c, err, out)
			}
			golden(t, c[1]+"-"+rel+".conf", out)
		}
	}
}

// historyAt serves a real history database, as gpumemd does, with three jobs recorded
// at fixed times: 101 ended, 102 over two GPUs and 103 still running.
func historyAt(t *testing.T) string {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	meta := slurmcli.Meta{User: "ana", Account: "physics", Name: "train"}
	job := func(id string, allocGiB, usedGiB uint64, gpus ...int) usage.Job {
		j := usage.Job{ID: id, Kind: usage.KindShard, Alloc: allocGiB << 30, Used: usedGiB << 30, Meta: meta}
		for _, g := range gpus {
			j.GPUs = append(j.GPUs, usage.JobGPU{GPU: g, Used: usedGiB << 30 / uint64(len(gpus)), Alloc: allocGiB << 30 / uint64(len(gpus))})
		}
		return j
	}
	return serveHistory(t, t0,
		[]usage.Job{job("101", 20, 6, 0), job("102", 40, 30, 0, 1)},
		[]usage.Job{job("101", 20, 8, 0), job("102", 40, 34, 0, 1)},
		[]usage.Job{job("102", 40, 36, 0, 1), job("103", 10, 2, 1)},
		[]usage.Job{job("103", 10, 3, 1)})
}

func TestGoldenJobsAndAdvise(t *testing.T) {
	url := historyAt(t)
	host := strings.TrimPrefix(url, "http://")
	// The port differs per run: so would the NODE column's width, so its header is padded
	// to the masked name's.
	header := regexp.MustCompile(`(?m)^NODE +`)
	mask := func(s string) string {
		return header.ReplaceAllString(strings.ReplaceAll(s, host, "NODE:PORT"), "NODE       ")
	}
	// --since reaches back to the fixed times above from whenever the test runs.
	since := []string{"--url", url, "--since", "87600h"}
	formats(t, "jobs", mask, append([]string{"jobs"}, since...), formatTable, formatJSON, formatCSV)
	formats(t, "jobs-102", mask, append([]string{"jobs", "102"}, since...), formatTable, formatJSON, formatCSV)
	formats(t, "advise", mask, append([]string{"advise", "--running", "--min-jobs", "1"}, since...), formatTable, formatJSON, formatCSV)
}

// TestGoldenReport: the lab's real 22.05 sacct output (internal/report/testdata),
// valued by the lab's inventory; the period ends before job 18, still running, was
// recorded, so the present never enters.
func TestGoldenReport(t *testing.T) {
	sacct := filepath.Join(t.TempDir(), "sacct")
	fixture, _ := filepath.Abs("../../internal/report/testdata/sacct-2205.txt")
	if err := os.WriteFile(sacct, []byte("#!/bin/sh\nexec cat "+fixture+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	formats(t, "report", nil, []string{"report", "--sacct", sacct, "--inventory", labInventory(t),
		"--start", "2026-11-30", "--end", "2026-12-01T01:00"}, formatTable, formatJSON, formatCSV)
}

// TestGoldenSimulate: the trace sample in the repository (internal/trace/testdata),
// two seeds; the run's wall time is masked.
func TestGoldenSimulate(t *testing.T) {
	wall := regexp.MustCompile(`("wall_(?:seconds|ms)": )[0-9.e+-]+|in [0-9.]+s\n`)
	mask := func(s string) string {
		return wall.ReplaceAllStringFunc(s, func(m string) string {
			if strings.HasPrefix(m, "in ") {
				return "in WALLs\n"
			}
			return m[:strings.Index(m, ":")+2] + "0"
		})
	}
	formats(t, "simulate", mask, []string{"simulate", "--nodes", "../../internal/trace/testdata/nodes.csv",
		"--workload", "../../internal/trace/testdata/pods.csv", "--seeds", "2", "--workers", "1",
		"--policy", "first-fit,best-fit,gpumem"}, formatTable, formatJSON, formatCSV)
	formats(t, "simulate-departures", mask, []string{"simulate", "--departures", "--load", "2", "--copies", "3",
		"--nodes", "../../internal/trace/testdata/nodes.csv", "--workload", "../../internal/trace/testdata/pods.csv",
		"--seeds", "2", "--workers", "1", "--policy", "first-fit,gpumem"}, formatTable, formatCSV)
	formats(t, "simulate-sweep", mask, []string{"simulate", "--sweep", "cpuonly,whole", "--nodes", "../../internal/trace/testdata/nodes.csv",
		"--workload", "../../internal/trace/testdata/pods.csv", "--seeds", "2", "--workers", "1"}, formatTable, formatJSON, formatCSV)
}

// TestGoldenSteerReport: running and pending shard jobs in the shapes of the 22.05 lab's
// scontrol -d -o show job and squeue (testdata/steer, the record's fields as the lab's
// real one in internal/slurmcli/testdata), over the lab's inventory.
func TestGoldenSteerReport(t *testing.T) {
	bin := t.TempDir()
	td, _ := filepath.Abs("testdata/steer")
	// 22.05's scontrol has no --json: the reader falls back to the one-line text.
	scontrol := "#!/bin/sh\ncase \"$*\" in *--json*) echo \"scontrol: unrecognized option '--json'\" >&2; exit 1 ;; esac\nexec cat " + td + "/jobs-22.05.txt\n"
	// squeue answers the pending list, and the running jobs (slurmcli.RunningFormat) the
	// reader confirms records by.
	squeue := "#!/bin/sh\ncase \"$*\" in *RUNNING*) exec cat " + td + "/running-22.05.txt ;; esac\nexec cat " + td + "/pending-22.05.txt\n"
	for name, script := range map[string]string{"scontrol": scontrol, "squeue": squeue} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	formats(t, "steer-report", nil, []string{"steer", "report", "--inventory", labInventory(t)}, formatTable, formatJSON, formatCSV)
}

// TestGoldenQuota: a pending shard job, as the 22.05 lab's squeue prints it, under the
// quotas of that lab's real assoc_mgr output (internal/accounting/testdata).
func TestGoldenQuota(t *testing.T) {
	dir := t.TempDir()
	assoc, _ := filepath.Abs("../../internal/accounting/testdata/assoc_mgr-2205.txt")
	queue, _ := filepath.Abs("testdata/quota-squeue-22.05.txt")
	squeue, scontrol := filepath.Join(dir, "squeue"), filepath.Join(dir, "scontrol")
	for path, file := range map[string]string{squeue: queue, scontrol: assoc} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\nexec cat "+file+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	formats(t, "quota", nil, []string{"quota", "4242", "--squeue", squeue, "--scontrol", scontrol, "--inventory", labInventory(t)},
		formatTable, formatJSON)
}

// TestGoldenMigStatus: the lab's MIG A100 (n2) against the layout mig plan wants for
// seven 5G requests, which it does not have yet.
func TestGoldenMigStatus(t *testing.T) {
	inv := labInventory(t)
	desired := t.TempDir()
	if out, err := run(t, "mig", "plan", "--config", "/dev/null", "--inventory", inv, "--keep-whole", "0", "--out", desired, "5G", "5G", "5G", "5G", "5G", "5G", "5G"); err != nil {
		t.Fatalf("mig plan: %v\n%s", err, out)
	}
	// Not as desired yet: status 1, so that mig status can be an assert.
	formatsExiting(t, 1, "mig-status", nil, []string{"mig", "status", "--config", "/dev/null", "--desired", desired, "--inventory", inv},
		formatTable, formatJSON, formatCSV)
}

// TestExitCodes: 0 done, 1 failed, 2 the command line was wrong; gres diff and check as
// diff(1): 0 same, 1 different, 2 trouble.
func TestExitCodes(t *testing.T) {
	inv := labInventory(t)
	gres := filepath.Join(t.TempDir(), "gres.conf")
	gen := []string{"--inventory", inv, "--slurm-version", "22.05.8"}
	if out, err := run(t, append([]string{"gres", "generate", "--out", gres}, gen...)...); err != nil {
		t.Fatalf("gres generate: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		code int
		says string // in the error, for 1 and 2
	}{
		{[]string{"inventory", "--inventory", inv, "-o", "table"}, 0, ""},
		{append([]string{"gres", "diff", gres}, gen...), 0, ""},
		{append([]string{"gres", "diff", gres, "--shard-unit", "2G"}, gen...), 1, ""},
		{append([]string{"gres", "diff", gres, "--shard-unit", "2"}, gen...), 2, "a bare number is not accepted"},
		{append([]string{"gres", "diff", filepath.Join(inv, "n1.json", "x")}, gen...), 2, "not a directory"},
		{[]string{"gres", "check", "--slurm-conf", "/nonexistent/slurm.conf"}, 2, "/nonexistent"},
		{[]string{"inventory", "--inventory", "/nonexistent"}, 1, "no inventory at /nonexistent"},
		{[]string{"jobs", "--url", "http://127.0.0.1:1"}, 1, "no gpumemd answers at http://127.0.0.1:1"},
		{[]string{"advise", "--url", "http://127.0.0.1:1"}, 1, "check that gpumemd runs on that node"},
		{[]string{"steer", "report", "--inventory", "/nonexistent"}, 1, "no inventory at /nonexistent: gpumemd --write-inventory writes it"},
		{[]string{"mig", "status", "--config", "/dev/null", "--inventory", "/nonexistent"}, 1, "no inventory at /nonexistent"},
		{[]string{"report", "--sacct", "/nonexistent/sacct", "--inventory", inv}, 1, "Slurm's client commands are not installed"},
		{[]string{"policy", "--config", "/nonexistent.conf"}, 2, "--config /nonexistent.conf: no such file"},
		{[]string{"mig", "plan", "--config", "/nonexistent.conf", "20G"}, 2, "--config /nonexistent.conf: no such file"},
		{[]string{"invetory"}, 2, "did you mean inventory?"},
		{[]string{"gres", "frobnicate"}, 2, `unknown command "frobnicate" for gpumemctl gres`},
		{[]string{"inventory", "--no-such-flag"}, 2, "unknown flag: --no-such-flag"},
		{[]string{"inventory", "-o", "xml"}, 2, "want json or table"},
		{[]string{"steer", "report", "-o", "yaml"}, 2, "want table, json or csv"},
		{[]string{"simulate", "-o", "svg"}, 2, "want table, json or csv"},
		{[]string{"steer", "report", "--sizes", "20"}, 2, "a bare number is not accepted"},
		{[]string{"exporter", "--fragmentation-sizes", "10,20"}, 2, "a bare number is not accepted"},
		{[]string{"inventory", "extra"}, 2, "gpumemctl inventory --help"},
		{[]string{"quota"}, 2, "accepts 1 arg(s), received 0"},
		{[]string{"quota", "1", "-o", "csv"}, 2, "want table or json"},
	} {
		out, err := run(t, c.args...)
		code, msg := exitCode(err)
		if code != c.code || c.says != "" && (msg == nil || !strings.Contains(msg.Error(), c.says)) {
			t.Errorf("gpumemctl %s: status %d (%v), want %d saying %q\n%s", strings.Join(c.args, " "), code, msg, c.code, c.says, out)
		}
	}
}

// exitCode's own table: what main turns an error into.
func TestExitCodeOfErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{errors.New("failed"), 1},
		{exitStatus{code: 1}, 1},
		{usageError(errors.New("bad flag")), 2},
		{trouble(errors.New("unreadable")), 2},
	} {
		if code, _ := exitCode(c.err); code != c.code {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, code, c.code)
		}
	}
}

// TestSharedConfDefaults: gpumem.conf's ShardUnit and ShardTypes are the defaults of
// every command that counts or names shards, as gpumemd reads them; a flag wins.
func TestSharedConfDefaults(t *testing.T) {
	inv, dir := labInventory(t), t.TempDir()
	conf := filepath.Join(dir, "gpumem.conf")
	if err := os.WriteFile(conf, []byte("ShardUnit = 4GiB\nShardTypes = per-gpu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	weights := func(args ...string) string {
		t.Helper()
		out, err := run(t, append([]string{"policy", "--inventory", inv, "--print", "weights"}, args...)...)
		if err != nil {
			t.Fatalf("policy %v: %v\n%s", args, err, out)
		}
		return out
	}
	fromConf, byFlags, builtIn := weights("--config", conf), weights("--shard-unit", "4G", "--shard-types", "per-gpu"), weights()
	if fromConf != byFlags || fromConf == builtIn {
		t.Errorf("policy weights: from gpumem.conf %q, by flags %q, built-in %q", fromConf, byFlags, builtIn)
	}
	if got := weights("--config", conf, "--shard-unit", "1G", "--shard-types", "none"); got != builtIn {
		t.Errorf("flags over gpumem.conf: %q, want the built-in %q", got, builtIn)
	}
	// advise rounds to whole units: 18G of peak is 20G in 4G shards.
	out, err := run(t, "advise", "--url", historyAt(t), "--since", "87600h", "--running", "--min-jobs", "1", "--config", conf, "-o", "csv")
	if err != nil || !strings.Contains(out, ",20g,") {
		t.Errorf("advise with ShardUnit = 4GiB: %v\n%s", err, out)
	}
}

// TestGoldenUsed: what the 22.05 lab's sacct printed for six jobs, two with a summary
// gpumemd wrote (one from the demo, one after slurmdbd's outage) and one with an
// admin's note: the list keeps those with a summary; JOBIDs print each job in full.
func TestGoldenUsed(t *testing.T) {
	sacct := filepath.Join(t.TempDir(), "sacct")
	fixture, _ := filepath.Abs("testdata/used-sacct-22.05.txt")
	if err := os.WriteFile(sacct, []byte("#!/bin/sh\nexec cat "+fixture+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	formats(t, "used", nil, []string{"used", "--sacct", sacct}, formatTable, formatJSON, formatCSV)
	formats(t, "used-jobs", nil, []string{"used", "--sacct", sacct, "12", "14"}, formatTable)
}
