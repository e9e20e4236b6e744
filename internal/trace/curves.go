package trace

import (
	"fmt"
	"io"
	"strconv"
)

// Curve is one published run: allocation ratio (%) at each whole percent of capacity
// arrived, Alloc[k] for k% arrived.
type Curve struct {
	Workload string // e.g. "openb_pod_list_default"
	Policy   string // e.g. "06-FGD"
	Tune     float64
	Seed     int64
	Alloc    []float64
}

// ReadCurves reads published allocation curves: columns workload, sc_policy, tune, seed,
// then 0, 1, 2, ... for the arrived percentages.
func ReadCurves(name string, r io.Reader) ([]Curve, error) {
	t, err := readTable(name, r, "workload", "sc_policy", "tune", "seed", "0")
	if err != nil {
		return nil, err
	}
	points := 0
	for {
		if _, ok := t.col[strconv.Itoa(points)]; !ok {
			break
		}
		points++
	}
	var out []Curve
	for i := range t.rows {
		c := Curve{Workload: t.str(i, "workload"), Policy: t.str(i, "sc_policy"), Alloc: make([]float64, points)}
		if c.Tune, err = t.float(i, "tune"); err != nil {
			return nil, err
		}
		if c.Seed, err = t.int(i, "seed"); err != nil {
			return nil, err
		}
		for k := range c.Alloc {
			if c.Alloc[k], err = t.float(i, strconv.Itoa(k)); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no curves", name)
	}
	return out, nil
}

// Final is the allocation ratio once everything has arrived.
func (c *Curve) Final() float64 { return c.Alloc[len(c.Alloc)-1] }
