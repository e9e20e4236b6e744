package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/manpage"
)

// execute runs gpumemd's command line in-process, as main does, and returns its exit
// status and what it printed.
func execute(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := newRoot(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		out.WriteString(err.Error())
	}
	return exitCode(err), out.String()
}

// TestExitCodes: 0 done, 1 gpumemd cannot start, 2 a wrong command line; task-prolog
// exits 0 whatever it is given, since a failing TaskProlog fails the job's task. None of
// these starts the daemon.
func TestExitCodes(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "gpumem.conf")
	if err := os.WriteFile(broken, []byte("[gpumemd]\nPollInterval = often\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badListen := filepath.Join(t.TempDir(), "listen.conf")
	if err := os.WriteFile(badListen, []byte("[gpumemd]\nListen = 127.0.0.1:99999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--help"}, 0, "gpumemd [flags]"},
		{[]string{"-h"}, 0, "Exit status: 0 after SIGTERM"},
		{[]string{"--version", "--config", broken}, 0, ""},
		{[]string{"--config", broken}, 1, `line 2: PollInterval = "often"`},
		{[]string{"--config", "/dev/null", "--once"}, 1, "add --write-gres, --write-inventory or both"},
		{[]string{"--no-such-flag"}, 2, "unknown flag: --no-such-flag (gpumemd --help lists the flags)"},
		{[]string{"-config", "/nonexistent"}, 2, "unknown shorthand flag"},
		{[]string{"--fragmentation-sizes", "5x,10"}, 2, `--fragmentation-sizes "5x,10": "5x": want a size from 1MiB to 1TiB`},
		{[]string{"--poll-interval", "often"}, 2, `--poll-interval "often": want a duration with its unit such as 30s`},
		{[]string{"--config", "/dev/null", "--listen", "127.0.0.1:99999"}, 2, "a port from 0 to 65535"},
		{[]string{"--config", "/dev/null", "--drain-after", "x"}, 2, `--drain-after "x": want a whole number`},
		{[]string{"--config", "/dev/null", "--drain-after", "0"}, 2, "want at least 1 poll each"},
		{[]string{"--config", "/dev/null", "--nvml=bogus"}, 2, "want real, mock:dgxa100"},
		{[]string{"--config", badListen}, 1, "a port from 0 to 65535"},
		{[]string{"--config", "/dev/null", "serve"}, 2, `unexpected argument "serve"`},
		{[]string{"task-prolog", "--no-such-flag"}, 0, "usage: gpumemd task-prolog"},
	} {
		code, out := execute(t, c.args...)
		if code != c.code || !strings.Contains(out, c.says) {
			t.Errorf("gpumemd %s: status %d, want %d saying %q:\n%s", strings.Join(c.args, " "), code, c.code, c.says, out)
		}
	}
}

// TestManPages: gpumemd's manual pages (section 8, in the gpumemd package) come from the
// flags it parses, with the exit status.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if err := manpage.Write(newRoot(context.Background(), nil), "8", manSections, dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "gpumemd.8"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`.TH "GPUMEMD" "8"`, "--fragmentation-sizes", "--mig-desired", "Exit status", "--version"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("gpumemd.8 lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "gpumemd-task-prolog.8")); err != nil {
		t.Error(err)
	}
	// Every page has EXIT STATUS, FILES and ENVIRONMENT; each Slurm hook its own status.
	for page, says := range map[string]string{
		"gpumemd.8":             "gpumemd cannot start or run",
		"gpumemd-task-prolog.8": "Always: a failing TaskProlog",
		"gpumemd-prolog.8":      "Slurm drains the node and requeues the job held",
		"gpumemd-epilog.8":      "Always: a failing epilog",
		"gpumemd-fence-check.8": "The step may run",
	} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, want := range []string{".SH EXIT STATUS\n", ".SH FILES\n", ".SH ENVIRONMENT\n", says} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", page, want)
			}
		}
	}
}

// TestDocsListEveryFlag: docs/gpumemd.md's flag table names exactly the flags gpumemd
// parses, so the page an admin reads never drifts from -h.
func TestDocsListEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../docs/gpumemd.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z.-]+)`").FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
	}
	var o options
	fs := newFlags(&o, io.Discard)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "version" && !documented[f.Name] {
			t.Errorf("--%s is not in docs/gpumemd.md's flag table", f.Name)
		}
		delete(documented, f.Name)
	})
	for name := range documented {
		t.Errorf("docs/gpumemd.md lists --%s, which gpumemd does not have", name)
	}
}

// TestMissingConfig: a gpumem.conf the admin named that is not there stops gpumemd
// (--config: status 2, $GPUMEM_CONF: 1), naming the path; the default path missing is
// noted and the built-in defaults run.
func TestMissingConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gpumem.conf")
	t.Setenv("GPUMEM_CONF", missing)
	if code, out := execute(t, "--nvml", "mock:dgxh100"); code != 1 || !strings.Contains(out, "$GPUMEM_CONF names "+missing+", which does not exist") {
		t.Errorf("$GPUMEM_CONF missing: status %d:\n%s", code, out)
	}
	t.Setenv("GPUMEM_CONF", "")
	if _, err := os.Stat(config.DefaultPath); err != nil {
		// --once without what to write stops right after the settings are read.
		var logged bytes.Buffer
		err := run(context.Background(), []string{"--once"}, slog.New(slog.NewTextHandler(&logged, nil)), nil)
		if !strings.Contains(logged.String(), "no gpumem.conf: running on the built-in defaults") || !strings.Contains(logged.String(), config.DefaultPath) {
			t.Errorf("default path missing: %v, logged %q", err, logged.String())
		}
	}
	o := options{ConfPath: missing}
	if err := o.confMissing(false); err != nil || !o.NoConf {
		t.Errorf("default path missing: %v, noted %v; want the defaults, noted", err, o.NoConf)
	}
	o = options{ConfPath: "/dev/null"}
	if err := o.confMissing(true); err != nil || o.NoConf {
		t.Errorf("--config /dev/null: %v, noted %v", err, o.NoConf)
	}
}

// TestEveryFlagRefusesABadValue gives each gpumemd flag that checks its value a word it
// never takes: status 2 before anything starts, naming the flag and the value and
// saying what is wanted, never a Go parser's text.
func TestEveryFlagRefusesABadValue(t *testing.T) {
	// Flags whose every word is a value: a list of names, a relative cgroup path, a node
	// name, a command.
	anyText := map[string]bool{"idle-exempt-qos": true, "idle-exempt-accounts": true, "fence-cgroup-scope": true,
		"node": true, "gres-hook": true, "scontrol": true, "mig-reload": true}
	var o options
	n := 0
	newFlags(&o, io.Discard).VisitAll(func(f *pflag.Flag) {
		plain := fmt.Sprintf("%T", f.Value) == "*pflag.stringValue"
		if plain || anyText[f.Name] || f.Value.Type() == "bool" {
			return
		}
		n++
		code, out := execute(t, "--config", "/dev/null", "--"+f.Name, "x")
		if code != 2 || !strings.Contains(out, "--"+f.Name) || !strings.Contains(out, `"x"`) || !strings.Contains(out, "want") ||
			strings.Contains(out, "strconv") || strings.Contains(out, "time:") {
			t.Errorf("gpumemd --%s x: status %d, want 2 naming --%s \"x\" and what it takes:\n%s", f.Name, code, f.Name, out)
		}
	})
	if n < 15 {
		t.Errorf("only %d flags checked", n)
	}
}
