package placement

// NewOursStep exposes the policy's scoring to the experiment that settled it: step 0 is
// FGD's integer score, a positive step compares decreases in steps of that many milli-GPU.
func NewOursStep(shapes []Shape, step float64) Policy { return newOurs(shapes, step) }

// NewOursStrand exposes the stranding key's step to the experiment; off turns it off.
func NewOursStrand(shapes []Shape, off bool, step int64) Policy {
	o := newOurs(shapes, 0)
	o.strand.step = step
	if off {
		o.strand.cpuPerMilli = 0
	}
	return o
}
