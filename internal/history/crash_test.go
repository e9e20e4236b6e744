package history

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/usage"
)

// TestMain doubles as the child process of TestSurvivesKill9: with
// GPUMEM_HISTORY_CHILD_DB set it writes polls as fast as it can until killed.
func TestMain(m *testing.M) {
	if path := os.Getenv("GPUMEM_HISTORY_CHILD_DB"); path != "" {
		os.Exit(writeForever(path))
	}
	os.Exit(m.Run())
}

func writeForever(path string) int {
	s, err := Open(path, Options{Bucket: time.Second, KeepSamples: 10 * time.Second})
	if err != nil {
		return 1
	}
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; ; i++ {
		jobs := []usage.Job{job(strconv.Itoa(i%50), i%8, uint64(i)*1024), job("1000000", 0, uint64(i))}
		if err := s.Record(t0.Add(time.Duration(i)*100*time.Millisecond), jobs); err != nil {
			return 2
		}
	}
}

func TestSurvivesKill9(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GPUMEM_HISTORY_CHILD_DB="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Let it write for a while, long enough for WAL checkpoints and pruning to happen
	// mid-flight, then kill it without warning.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
			break
		}
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("writer ended by itself (%v) before the kill; it must die mid-write", cmd.ProcessState)
	}

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.IntegrityCheck(); err != nil || r != "ok" {
		t.Fatalf("integrity_check after kill -9 = %q, %v; want ok", r, err)
	}
	j, _, err := s.Job("1000000")
	if err != nil || j.PeakBytes == 0 {
		t.Fatalf("job written before the kill: %+v, %v; want it with a peak", j, err)
	}
	if err := s.Record(time.Now(), nil); err != nil {
		t.Fatalf("writing after recovery: %v", err)
	}
}
