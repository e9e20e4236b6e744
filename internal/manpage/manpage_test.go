package manpage

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool", Version: "v1.2.3 (revision abc, go1.26.8)"}
	root.AddCommand(&cobra.Command{Use: "plain", Short: "Plain", Run: func(*cobra.Command, []string) {}},
		&cobra.Command{Use: "diff", Short: "Diff", Run: func(*cobra.Command, []string) {},
			Annotations: map[string]string{ExitStatus: "0\tsame\n1\tdiffer"}})
	return root
}

var sections = Sections{
	ExitStatus:  []Item{{"0", "done"}, {"1", "failed"}, {"2", "a wrong command line"}},
	Files:       []Item{{"/etc/tool.conf", "its settings (--config)"}},
	Environment: []Item{{"TOOL_CONF", "where --config is not given"}},
}

// pageSections are the .SH titles of a page, in order.
func pageSections(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\.SH (.+)$`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, strings.Trim(m[1], `"`))
	}
	return out
}

// TestEveryPageHasItsSections: each page has EXIT STATUS, FILES and ENVIRONMENT, before
// SEE ALSO, with its own exit status where a command gives one.
func TestEveryPageHasItsSections(t *testing.T) {
	dir := t.TempDir()
	if err := Write(tree(), "1", sections, dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"tool.1", "tool-plain.1", "tool-diff.1"} {
		got := strings.Join(pageSections(t, filepath.Join(dir, p)), ", ")
		if !strings.Contains(got, "EXIT STATUS, FILES, ENVIRONMENT, SEE ALSO") {
			t.Errorf("%s: sections %s; want EXIT STATUS, FILES and ENVIRONMENT before SEE ALSO", p, got)
		}
	}
	diff, _ := os.ReadFile(filepath.Join(dir, "tool-diff.1"))
	plain, _ := os.ReadFile(filepath.Join(dir, "tool-plain.1"))
	if !strings.Contains(string(diff), ".TP\n\\fB1\\fP\ndiffer\n") || strings.Contains(string(diff), "a wrong command line") {
		t.Errorf("tool-diff.1 does not give its own exit status:\n%s", diff)
	}
	if !strings.Contains(string(plain), ".TP\n\\fB/etc/tool.conf\\fP\nits settings (\\-\\-config)\n") {
		t.Errorf("tool-plain.1: FILES not as written, hyphens escaped:\n%s", plain)
	}
}

// TestFooterHoldsTheReleaseAlone: the footer line (source, date, title) names the
// release without --version's revision and toolchain, which ran into the date; rendered
// by groff where it is installed.
func TestFooterHoldsTheReleaseAlone(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1764633600") // Dec 2025
	if err := Write(tree(), "1", sections, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tool.1"))
	if err != nil {
		t.Fatal(err)
	}
	th := regexp.MustCompile(`(?m)^\.TH "TOOL" "1" "Dec 2025" "gpumem [^" ]+" "gpumem"$`)
	if !th.Match(b) {
		t.Fatalf("tool.1's .TH line is not TITLE SECTION DATE \"gpumem VERSION\" MANUAL:\n%s", b)
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Log("groff not installed: the .TH line is checked, its rendering is not")
		return
	}
	out, err := exec.Command(groff, "-man", "-Tascii", "-P-cbou", filepath.Join(dir, "tool.1")).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	footer := strings.Fields(lines[len(lines)-1])
	if len(footer) != 5 || footer[0] != "gpumem" || footer[2] != "Dec" || footer[3] != "2025" || footer[4] != "TOOL(1)" {
		t.Errorf("footer %q; want gpumem VERSION, the date and TOOL(1), apart", lines[len(lines)-1])
	}
}
