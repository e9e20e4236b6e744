// Command gpumemctl is the gpumem admin CLI: gres.conf generation, MIG planning,
// inventory, per-job usage and policy simulation.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/version"
)

// subcommands is filled by each command's own file, so that commands can be added
// without every author editing one list.
var subcommands []func() *cobra.Command

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:     "gpumemctl",
		Version: version.String(),
		Short:   "Administer GPU-memory-aware scheduling for Slurm",
		Long: `gpumemctl generates and checks gres.conf, shows the GPU inventory and each job's GPU
memory, plans and applies MIG layouts, steers shard jobs, prints Slurm accounting
policy and reports, and simulates placement policies.

Commands that print data take -o table|json (and csv where the data is rows). Sizes take
their unit (20G, 512M), as in the request language. gpumem.conf (--config, default
$GPUMEM_CONF or /etc/slurm/gpumem.conf) gives the defaults that gpumemd shares; flags win.

Exit status: 0 done, 1 the command failed, 2 the command line is wrong (an unknown
command or flag, a value a flag never takes, a wrong number of arguments). gres diff and
gres check exit as diff(1): 0 same or accepted, 1 different or refused, 2 trouble.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range subcommands {
		root.AddCommand(c())
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(fmt.Errorf("%w (%s --help lists its flags)", cliflag.Explain(err), c.CommandPath()))
	})
	strictArgs(root)
	completeValues(root)
	return root
}

// strictArgs makes every mistake in the positional arguments a usage error (status 2),
// and a command group given a command it does not have say so instead of printing its
// help and succeeding, as cobra does for a group below the root.
func strictArgs(c *cobra.Command) {
	switch {
	case c.HasSubCommands() && !c.Runnable():
		c.Args = unknownCommand
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	case c.HasSubCommands() && c.Args == nil:
		c.Args = unknownCommand
	case c.Args != nil:
		check := c.Args
		c.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return usageError(fmt.Errorf("%w (%s --help shows its usage)", err, c.CommandPath()))
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		strictArgs(sub)
	}
}

// unknownCommand refuses any argument to a command that only groups others, naming the
// nearest command it has.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := ""
	c.SuggestionsMinimumDistance = 2
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		hint = "; did you mean " + s[0] + "?"
	}
	return usageError(fmt.Errorf("unknown command %q for %s%s (%s --help lists its commands)", args[0], c.CommandPath(), hint, c.CommandPath()))
}

// exitStatus is an error that carries the status gpumemctl exits with: 0 done, 1 the
// command failed, 2 the command line was wrong. gres diff and gres check follow diff(1):
// 0 same (or accepted), 1 different (or refused), 2 trouble. err is nil when the output
// already said everything.
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

// usageError marks err as a mistake in the command line itself (an unknown command or
// flag, a value a flag never takes, a wrong number of arguments): status 2.
func usageError(err error) error { return exitStatus{2, err} }

// trouble marks err as diff(1)'s status 2: the comparison itself could not be made.
func trouble(err error) error {
	if err == nil {
		return nil
	}
	return exitStatus{2, err}
}

func main() {
	code, err := exitCode(newRoot().Execute())
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpumemctl:", err)
	}
	os.Exit(code)
}

// exitCode is the status gpumemctl exits with after err, and what it prints (nil when
// the output already said everything).
func exitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var st exitStatus
	if errors.As(err, &st) {
		return st.code, st.err
	}
	return 1, err
}
