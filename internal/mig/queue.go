package mig

// TypedWait is one pending job's request for typed GPUs: Count of Type, a MIG profile
// where the job waits for one (a GPU model name is not).
type TypedWait struct {
	Type  string
	Count int64
}

// QueueDemand is the pending jobs' GPU memory as demand: shards (one job each) times
// the shard unit, then the real MiB of the MIG profile each typed job waits for,
// weighted by its count. A typed job that names no known profile (a whole-GPU request)
// carries no size and is not counted.
func QueueDemand(shards []int64, typed []TypedWait, unitMiB int64) []Demand {
	var ds []Demand
	for _, n := range shards {
		ds = append(ds, Demand{MiB: n * unitMiB, Weight: 1})
	}
	for _, t := range typed {
		if mib, ok := ProfileMiB(t.Type); ok {
			ds = append(ds, Demand{MiB: mib, Weight: float64(t.Count)})
		}
	}
	return ds
}

// ProfileMiB is the real memory of a MIG profile name in the first catalog model that
// has it; a GPU model name (not a profile) is not found.
func ProfileMiB(name string) (int64, bool) {
	for _, m := range Catalog() {
		if p, err := m.Profile(name); err == nil {
			return p.MiB, true
		}
	}
	return 0, false
}
