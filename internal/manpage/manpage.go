// Package manpage writes a cobra command tree's manual pages, so gpumemd's and
// gpumemctl's pages are made one way and never drift from what -h prints.
package manpage

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Command is the hidden `man DIR` command of a binary: its pages, one per command,
// in section (1 for user commands, 8 for daemons). A build step
// (packaging/build.sh), not something an admin runs.
func Command(section string) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the manual pages (section " + section + ") into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return Write(cmd.Root(), section, args[0])
		},
	}
}

// Write writes root's manual pages into dir.
func Write(root *cobra.Command, section, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root.DisableAutoGenTag = true // the same text for the same source: reproducible packages
	hdr := &doc.GenManHeader{Section: section, Source: "gpumem " + root.Version, Manual: "gpumem"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("writing manual pages into %s: %w", dir, err)
	}
	return nil
}
