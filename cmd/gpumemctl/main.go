// Command gpumemctl is the gpumem admin CLI: gres.conf generation, MIG planning,
// inventory, per-job usage and policy simulation.
package main

import (
	"errors"
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

// exitStatus is an error that carries the status gpumemctl exits with. gres diff and
// gres check follow diff(1): 0 same (or accepted), 1 different (or refused), 2 trouble;
// err is nil when the output already said everything.
type exitStatus struct {
	code int
	err  error
}

func (e exitStatus) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e exitStatus) Unwrap() error { return e.err }

// trouble marks err as diff(1)'s status 2: the comparison itself could not be made.
func trouble(err error) error {
	if err == nil {
		return nil
	}
	return exitStatus{2, err}
}

func main() {
	err := newRoot().Execute()
	if err == nil {
		return
	}
	code := 1
	var st exitStatus
	if errors.As(err, &st) {
		code, err = st.code, st.err
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpumemctl:", err)
	}
	os.Exit(code)
}
