package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() { subcommands = append(subcommands, newManCmd) }

// newManCmd writes gpumemctl's manual pages, one per command, from the same help text
// the commands print, so the packages' man pages never drift from -h. Hidden: it is a
// build step (packaging/build.sh), not something an admin runs.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write gpumemctl's manual pages (section 1) into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true // the same text for the same source: reproducible packages
			hdr := &doc.GenManHeader{Section: "1", Source: "gpumem " + root.Version, Manual: "gpumem"}
			if err := doc.GenManTree(root, hdr, args[0]); err != nil {
				return fmt.Errorf("writing manual pages into %s: %w", args[0], err)
			}
			return nil
		},
	}
}
