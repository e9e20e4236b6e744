package placement

// NewOursStep exposes the policy's scoring to the experiment that settled it: step 0 is
// FGD's integer score, a positive step compares decreases in steps of that many milli-GPU.
func NewOursStep(shapes []Shape, step float64) Policy { return newOurs(shapes, step) }
