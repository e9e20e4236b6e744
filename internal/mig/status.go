package mig

import "github.com/gpumem/gpumem/internal/inventory"

// GPUState is one desired GPU against the inventory: a record of `gpumemctl mig status`,
// whose JSON it is.
type GPUState struct {
	Node    string `json:"node"`
	GPU     int    `json:"gpu"`
	State   string `json:"state"` // ok, differs or unknown
	Desired string `json:"desired"`
	Actual  string `json:"actual,omitempty"` // empty when unknown
	Model   string `json:"-"`                // the desired file's catalog key, for Picture
}

// Picture draws the GPU's desired and actual layouts slot by slot (Model.Draw), for
// people; nil when its model is not in the catalog.
func (st GPUState) Picture() []string {
	m, err := Lookup(st.Model)
	if err != nil {
		return nil
	}
	lines := []string{"          " + SlotRuler()}
	want, _ := ParseLayout(st.Desired)
	lines = append(lines, "  desired "+m.Draw(want))
	if st.State != "unknown" {
		have, _ := ParseLayout(st.Actual)
		lines = append(lines, "  actual  "+m.Draw(have))
	}
	return lines
}

// Status compares each desired GPU with the inventory, in the order of ds and their
// GPUs: "ok" where the layouts agree (instance order aside), "differs" where the node
// has yet to apply (or could not), "unknown" where the inventory lacks the node or GPU.
// differ counts the GPUs not ok. Each of ds must have passed Layouts (DecodeDesired).
func Status(ds []Desired, c inventory.Cluster) (states []GPUState, differ int) {
	actual := map[string]map[int]inventory.GPU{} // node -> NVML index -> GPU
	for _, n := range c.Nodes {
		actual[n.Name] = map[int]inventory.GPU{}
		for _, g := range n.GPUs {
			actual[n.Name][g.Index] = g
		}
	}
	for _, d := range ds {
		want, _, _ := d.Layouts() // checked by the caller
		for _, g := range d.GPUs {
			st := GPUState{Node: d.Node, GPU: g.Index, State: "unknown", Desired: g.Layout, Model: g.Model}
			if gpu, ok := actual[d.Node][g.Index]; ok {
				cur := LayoutOf(gpu)
				st.Actual, st.State = cur.String(), "ok"
				if !SameLayout(cur, want[g.Index]) {
					st.State = "differs"
				}
			}
			if st.State != "ok" {
				differ++
			}
			states = append(states, st)
		}
	}
	return states, differ
}
