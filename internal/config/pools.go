package config

import (
	"errors"
	"fmt"
	"strings"
)

// Pool routes gpu:mem jobs that name no partition by their per-GPU memory: a request in
// [MinMiB, MaxMiB] may use Partition (MaxMiB 0: no upper bound), so small slices go to
// the nodes meant for them and big requests are not starved behind them.
type Pool struct {
	Partition      string
	MinMiB, MaxMiB int64
}

// parsePools reads "small:0-24g, big:24g-": partition:min-max entries, sizes as for
// ShardUnit, an empty max meaning no bound.
func parsePools(v string) ([]Pool, error) {
	var pools []Pool
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, rng, ok := strings.Cut(e, ":")
		lo, hi, ok2 := strings.Cut(rng, "-")
		if !ok || !ok2 || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("entry %q: want partition:min-max such as small:0-24g or big:24g-", e)
		}
		p := Pool{Partition: strings.TrimSpace(name)}
		var err error
		if p.MinMiB, err = poolSize(lo); err != nil {
			return nil, fmt.Errorf("entry %q: min: %w", e, err)
		}
		if p.MaxMiB, err = poolSize(hi); err != nil {
			return nil, fmt.Errorf("entry %q: max: %w", e, err)
		}
		if p.MaxMiB != 0 && p.MaxMiB < p.MinMiB {
			return nil, fmt.Errorf("entry %q: max is below min", e)
		}
		pools = append(pools, p)
	}
	return pools, nil
}

// poolSize is parseSize that also takes 0 and empty (no bound).
func poolSize(v string) (int64, error) {
	if v = strings.TrimSpace(v); v == "" || v == "0" {
		return 0, nil
	}
	n, err := parseSize(v)
	if err != nil {
		return 0, errors.New("want 0, empty, or a size such as 24g")
	}
	return n, nil
}
