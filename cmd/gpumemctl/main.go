// Command gpumemctl is the gpumem admin CLI: gres.conf generation, MIG planning,
// inventory, per-job usage and policy simulation.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/version"
)

// subcommands is filled by each command's own file, so that commands can be added
// without every author editing one list.
var subcommands []func() *cobra.Command

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "gpumemctl",
		Version:       version.String(),
		Short:         "Administer GPU-memory-aware scheduling for Slurm",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range subcommands {
		root.AddCommand(c())
	}
	return root
}

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gpumemctl:", err)
		os.Exit(1)
	}
}
