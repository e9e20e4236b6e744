package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/manpage"
)

// TestEveryManPageHasExitStatusFilesEnvironment: each of gpumemctl's pages has the three
// sections, and the commands whose 1 means more than a failure say what it means.
func TestEveryManPageHasExitStatusFilesEnvironment(t *testing.T) {
	dir := t.TempDir()
	if err := manpage.Write(newRoot(), "1", manSections, dir); err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	if len(pages) < 20 {
		t.Fatalf("%d pages, want one per command", len(pages))
	}
	for _, p := range pages {
		b, _ := os.ReadFile(p)
		for _, sec := range []string{".SH EXIT STATUS\n", ".SH FILES\n", ".SH ENVIRONMENT\n"} {
			if !strings.Contains(string(b), sec) {
				t.Errorf("%s lacks %s", filepath.Base(p), strings.TrimSpace(sec))
			}
		}
	}
	for page, says := range map[string]string{
		"gpumemctl-gres-diff.1":      "They differ; the diff is printed.",
		"gpumemctl-gres-check.1":     "slurmd refuses it.",
		"gpumemctl-mig-status.1":     "not in the inventory",
		"gpumemctl-jobs.1":           "a node did not answer",
		"gpumemctl-inventory-pull.1": "a node did not answer",
		"gpumemctl-advise.1":         "a node did not answer",
		"gpumemctl-gres-generate.1":  "The command line is wrong",
		"gpumemctl-exporter.1":       "/var/lib/gpumem/refusals.json",
		"gpumemctl-simulate.1":       "GPUMEM_TRACE_DIR",
		"gpumemctl-report.1":         "GPUMEM_CONF",
	} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(b), `\-`, "-"), says) {
			t.Errorf("%s: %v; want it to say %q", page, err, says)
		}
	}
}
