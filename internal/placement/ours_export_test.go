package placement

// NewOursStep exposes the policy's resolution to the experiment that settled it.
func NewOursStep(shapes []Shape, step float64) Policy { return newOurs(shapes, step) }
