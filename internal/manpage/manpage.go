// Package manpage writes a cobra command tree's manual pages, so gpumemd's and
// gpumemctl's pages are made one way and never drift from what -h prints. Cobra writes
// NAME, SYNOPSIS, DESCRIPTION, OPTIONS and SEE ALSO; Sections adds EXIT STATUS, FILES and
// ENVIRONMENT, which man-pages(7) expects of a command's page.
package manpage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/version"
)

// ExitStatus is the annotation of a command whose exit status is not its binary's: lines
// of "STATUS<TAB>meaning", as Sections.ExitStatus holds them.
const ExitStatus = "manpage-exit-status"

// Item is one entry of a section: a term (a status, a path, a variable) and what it is.
type Item struct{ Term, Text string }

// Sections are what every page of a binary says beyond cobra's own sections. A command
// with an ExitStatus annotation says that under EXIT STATUS instead.
type Sections struct {
	ExitStatus, Files, Environment []Item
}

// Command is the hidden `man DIR` command of a binary: its pages, one per command,
// in section (1 for user commands, 8 for daemons). A build step
// (packaging/build.sh), not something an admin runs.
func Command(section string, s Sections) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the manual pages (section " + section + ") into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return Write(cmd.Root(), section, s, args[0])
		},
	}
}

// Write writes root's manual pages into dir: one per command cobra would document.
func Write(root *cobra.Command, section string, s Sections, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root.DisableAutoGenTag = true // the same text for the same source: reproducible packages
	// The footer holds source, date and title on one line of about 80 columns: the release
	// alone fits there, where --version's line with revision and toolchain ran into the
	// date.
	hdr := doc.GenManHeader{Section: section, Source: "gpumem " + version.Get().Version, Manual: "gpumem"}
	return writeTree(root, hdr, s, dir)
}

// writeTree walks the tree as doc.GenManTree does.
func writeTree(cmd *cobra.Command, hdr doc.GenManHeader, s Sections, dir string) error {
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := writeTree(c, hdr, s, dir); err != nil {
			return err
		}
	}
	var page bytes.Buffer
	h := hdr // GenMan fills in the date: each page its own copy
	if err := doc.GenMan(cmd, &h, &page); err != nil {
		return fmt.Errorf("manual page of %s: %w", cmd.CommandPath(), err)
	}
	name := strings.ReplaceAll(cmd.CommandPath(), " ", "-") + "." + hdr.Section
	if err := os.WriteFile(filepath.Join(dir, name), addSections(page.Bytes(), cmd, s), 0o644); err != nil {
		return fmt.Errorf("writing manual pages into %s: %w", dir, err)
	}
	return nil
}

// addSections puts EXIT STATUS, FILES and ENVIRONMENT before SEE ALSO, where
// man-pages(7) orders them, or at the end of a page without one.
func addSections(page []byte, cmd *cobra.Command, s Sections) []byte {
	exit := s.ExitStatus
	if a, ok := cmd.Annotations[ExitStatus]; ok {
		exit = parseItems(a)
	}
	var add bytes.Buffer
	for _, sec := range []struct {
		title string
		items []Item
	}{{"EXIT STATUS", exit}, {"FILES", s.Files}, {"ENVIRONMENT", s.Environment}} {
		if len(sec.items) == 0 {
			continue
		}
		fmt.Fprintf(&add, ".SH %s\n", sec.title)
		for _, it := range sec.items {
			fmt.Fprintf(&add, ".TP\n\\fB%s\\fP\n%s\n", roff(it.Term), roff(it.Text))
		}
		add.WriteString("\n")
	}
	if i := bytes.Index(page, []byte("\n.SH SEE ALSO")); i >= 0 {
		return append(append(append([]byte{}, page[:i+1]...), add.Bytes()...), page[i+1:]...)
	}
	return append(page, add.Bytes()...)
}

// parseItems reads an ExitStatus annotation: one "TERM<TAB>text" a line.
func parseItems(a string) []Item {
	var out []Item
	for _, l := range strings.Split(strings.TrimSpace(a), "\n") {
		term, text, _ := strings.Cut(l, "\t")
		out = append(out, Item{strings.TrimSpace(term), strings.TrimSpace(text)})
	}
	return out
}

// roff escapes text for a line of a page: backslashes and hyphens (which groff would
// otherwise render as a dash or break at), and a leading dot or quote, which would
// start a request.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// ConfEnv is the ENVIRONMENT entry both binaries share: the variable that names another
// gpumem.conf.
var ConfEnv = Item{config.PathEnv, "The gpumem.conf to read where --config is not given (default " + config.DefaultPath + ")."}
