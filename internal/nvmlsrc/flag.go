package nvmlsrc

import (
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/cliflag"
)

// FlagName is the one flag every gpumem binary uses to pick its NVML backend.
const FlagName = "nvml"

// AddFlag registers --nvml on fs over *p, whose current value is its default, so
// gpumemd and gpumemctl select a backend alike; a spec that names no backend is refused
// while the command line is parsed.
func AddFlag(fs *pflag.FlagSet, p *string) {
	if *p == "" {
		*p = KindReal
	}
	fs.Var(cliflag.NewChecked(p, CheckSpec), FlagName, "NVML backend: "+Usage)
}
