package placement

// useOrder numbers nodes in the order they were first put in use. Ours breaks ties
// between equally good nodes in that order, which is first fit over the nodes already
// opened: the oldest open node fills up before a newer one. (The published FGD breaks
// ties in one fixed order of all nodes; among nodes in use that order and this one
// mostly agree, as the first node of a kind to be opened is the first in its order.)
type useOrder struct {
	first []int // by node: 1, 2, ... in order of first use; 0 = not seen in use yet
	uses  int
	last  int // node of the last choice, -1 before any
	// numbered lists the nodes given a number since the candidates' index last read it:
	// their place in the ranking changed.
	numbered []int
}

// begin readies the order for a call on s, numbering the node chosen last time first:
// it was put in use before any node this call may come across.
func (u *useOrder) begin(s *State) {
	u.size(s)
	if u.last >= 0 {
		u.of(s, u.last)
	}
}

// size starts the order over when s has another number of nodes than it was made for.
func (u *useOrder) size(s *State) {
	if len(u.first) != len(s.Nodes) {
		u.first, u.uses, u.last, u.numbered = make([]int, len(s.Nodes)), 0, -1, nil
	}
}

// of is node n's number, given it one if it is in use and has none yet; 0 if idle.
func (u *useOrder) of(s *State, n int) int {
	if u.first[n] == 0 && s.Nodes[n].UsedCPU > 0 {
		u.uses++
		u.first[n] = u.uses
		u.numbered = append(u.numbered, n)
	}
	return u.first[n]
}
