package slurmrel

import (
	"fmt"
	"strings"
)

// CHeader is cgo/include/gpumem_gates.h: one macro per gate, true where the Slurm whose
// slurm_version.h the plugins are built with has it. The C code asks these, never
// SLURM_VERSION_NUMBER itself, so a release's differences are stated in one place.
func CHeader(t *Releases) string {
	var b strings.Builder
	b.WriteString(`/* The release table's gates (internal/slurmrel/releases.txt), for the plugins' C.
 * Printed by ` + "`go run ./cmd/slurm-release cheader`" + `: edit the table, not this file
 * (a unit test checks that the two agree). */
#ifndef GPUMEM_GATES_H
#define GPUMEM_GATES_H

#include <slurm/slurm_version.h>

`)
	for _, g := range t.Gates {
		fmt.Fprintf(&b, "/* %s */\n#define GPUMEM_%s (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(%d, %d, %d))\n",
			g.What, strings.ToUpper(strings.ReplaceAll(g.Name, "-", "_")), g.Since.Major, g.Since.Minor, g.Since.Micro)
	}
	b.WriteString("\n#endif\n")
	return b.String()
}
