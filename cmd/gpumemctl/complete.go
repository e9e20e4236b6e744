package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/sim"
)

// completeValues gives every flag whose values form a known set its shell completion,
// on every command that has it, so that `gpumemctl ... -o <TAB>` offers what the
// flag takes: the output formats of that command, the NVML backends, the placement
// policies, the MIG catalog's models.
func completeValues(c *cobra.Command) {
	visit := func(f *pflag.Flag) {
		var values []string
		switch {
		case f.Name == "output":
			if o, ok := f.Value.(*output); ok {
				values = o.formats
			}
		case f.Name == nvmlsrc.FlagName:
			values = []string{nvmlsrc.KindReal, "mock:dgxa100", "mock:dgxh100", "mock:dgxh200", nvmlsrc.KindFake + ":"}
		case f.Name == "policy" && strings.HasPrefix(c.CommandPath(), "gpumemctl simulate"):
			values = append(append([]string(nil), sim.Policies...), "all")
		case f.Name == "policy":
			values = placement.Names()
		case f.Name == "model":
			for _, m := range mig.Catalog() {
				values = append(values, m.Key)
			}
		}
		if values != nil {
			vs, dir := values, cobra.ShellCompDirectiveNoFileComp
			if f.Name == nvmlsrc.FlagName {
				dir |= cobra.ShellCompDirectiveNoSpace // fake: goes on with the node file's path
			}
			// Registered once per flag: a persistent flag is seen on its command only.
			_ = c.RegisterFlagCompletionFunc(f.Name, func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return vs, dir
			})
		}
	}
	c.LocalNonPersistentFlags().VisitAll(visit)
	c.PersistentFlags().VisitAll(visit)
	for _, sub := range c.Commands() {
		completeValues(sub)
	}
}
