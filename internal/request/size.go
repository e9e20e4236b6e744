package request

import (
	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/units"
)

// MaxMiB bounds a size: 1 PiB. No GPU comes near it; the bound only stops overflow and
// typing accidents, and admission answers anything realistic with a reason.
const MaxMiB = units.MaxMiB

// ParseSize reads a GPU memory size such as 20g, 20G, 20GiB, 20480m, 20gb or 1.5t and
// returns it in MiB, rounded up: a job never gets less memory than it asked for. A unit is
// required, because a bare number means MB in --mem but GPUs in --gres. The grammar is
// gpumem's one (units.Read); only the wording of a refusal is the request's.
func ParseSize(s string) (int64, error) {
	mib, why := units.Read(s)
	switch why {
	case "":
		return mib, nil
	case units.WhyNegative, units.WhyZero:
		why += refusal.SizeAtLeast
	}
	return 0, &SizeError{Token: s, Why: why}
}
