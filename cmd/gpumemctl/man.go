package main

import (
	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/manpage"
)

func init() { subcommands = append(subcommands, newManCmd) }

// newManCmd writes gpumemctl's manual pages (section 1) from the same help text the
// commands print.
func newManCmd() *cobra.Command { return manpage.Command("1") }
