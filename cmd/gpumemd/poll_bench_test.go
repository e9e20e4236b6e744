package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

// BenchmarkPoll is one poll of a fake 8-GPU node with four jobs: NVML reads, /proc
// lookups, policy, health, a SQLite transaction and the metrics state. At 1 s polling
// the soak target (<= 1% of a core) allows 10ms per poll.
func BenchmarkPoll(b *testing.B) {
	dir := b.TempDir()
	var gpus []string
	slurm := slurmtest.New(b, false)
	var jobs []slurmtest.Job
	for i := 0; i < 8; i++ {
		procs := ""
		if i < 4 {
			job := exec.Command("sleep", "600")
			job.Env = []string{fmt.Sprintf("SLURM_JOB_ID=%d", 900+i), "SLURM_SHARDS_ON_NODE=10"}
			if err := job.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { job.Process.Kill(); job.Wait() }()
			jobs = append(jobs, slurmtest.Job{ID: fmt.Sprint(900 + i), UID: os.Getuid(), Node: "bench", GPU: i, Shards: 10, PIDs: []int{job.Process.Pid}})
			procs = fmt.Sprintf(`{"pid": %d, "used_mib": %d}`, job.Process.Pid, 4096*(i+1))
		}
		gpus = append(gpus, fmt.Sprintf(`{"model": "h100-80gb", "temperature_c": 40, "power_mw": 250000, "processes": [%s]}`, procs))
	}
	fake := filepath.Join(dir, "node.json")
	os.WriteFile(fake, []byte(`{"gpus": [`+strings.Join(gpus, ",")+`]}`), 0o644)
	src, err := nvmlsrc.Open("fake:" + fake)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	opt := options{Gpumemd: config.DefaultGpumemd(), Shared: config.Default()}
	opt.HistoryDB = filepath.Join(dir, "history.db")
	slurm.SetJobs(jobs...)
	opt.Scontrol = slurm.Scontrol
	d := newDaemon(opt, "bench", src, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if d.hist.Load() == nil {
		b.Fatal("no history")
	}
	defer d.closeHistory()
	if d.poll(time.Unix(1_699_999_999, 0)); len(d.exporter.State().Jobs) != 4 {
		b.Fatalf("%d jobs seen, want 4", len(d.exporter.State().Jobs))
	}
	now := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.poll(now.Add(time.Duration(i) * time.Second))
	}
}
