package shim

import (
	"bytes"
	"strings"
	"testing"
)

// TestClientTerminalGetsOnlyErrors loads the built cli_filter_gpumem.so into a stand-in
// for sbatch (testdata/client_harness.c): what the filter says while it works ("loaded",
// the inventory it read) is Slurm debug output, for -v; only a refusal, which the user
// must read, is an error on the terminal. Nothing is info, which every user would see.
func TestClientTerminalGetsOnlyErrors(t *testing.T) {
	// LogLevel info: the filter has things to say, and they must still stay off the terminal.
	h := newHarness(t, "client", "LogLevel = info\n")
	cmd := h.command("cli_filter_gpumem.so")
	cmd.Stdin = strings.NewReader("gpu:mem:20g\ngpu:2\ngpu:mem:abc\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("harness: %v\n%s", err, stderr.String())
	}
	wantOut := "rc=0 gres=shard:20\nrc=0 gres=gpu:2\nrc=-1 gres=gpu:mem:abc\n"
	if stdout.String() != wantOut {
		t.Errorf("filter results:\n got %s\nwant %s", stdout.String(), wantOut)
	}
	var debug, errs int
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		switch {
		case strings.HasPrefix(line, "debug: cli_filter/gpumem: "):
			debug++
		case strings.HasPrefix(line, "error: ") && strings.Contains(line, `"gpu:mem:abc" has a bad size`):
			errs++
		default:
			t.Errorf("on the user's terminal: %q; only the refusal belongs there", line)
		}
	}
	if !strings.Contains(stderr.String(), "debug: cli_filter/gpumem: loaded: config "+h.conf) || debug < 2 {
		t.Errorf("want the load and the inventory as debug lines (-v), got:\n%s", stderr.String())
	}
	if errs != 1 {
		t.Errorf("want the refusal once, as an error; got:\n%s", stderr.String())
	}
}
