package mig

import "strings"

// slotWidth is the characters one memory slot takes in a drawing: enough for the
// common profile names (1g.10gb) of a one-slot instance.
const slotWidth = 8

// Draw pictures one GPU's layout as its Slots memory slots, each instance across the
// slots it holds and free slots as dots:
//
//	|2g.10gb        |1g.5gb |1g.5gb |3g.20gb                        |
//
// A layout that is not valid for m is drawn as its text (Validate says why).
func (m Model) Draw(l Layout) string {
	if err := m.Validate(l); err != nil {
		return l.String()
	}
	at := map[int]Profile{}
	for _, pl := range l {
		p, _ := m.Profile(pl.Profile) // known: Validate passed
		at[pl.Start] = p
	}
	var b strings.Builder
	b.WriteByte('|')
	for s := 0; s < Slots; {
		p, ok := at[s]
		if !ok {
			b.WriteString(strings.Repeat(".", slotWidth-1))
			b.WriteByte('|')
			s++
			continue
		}
		room := p.Mem*slotWidth - 1
		name := p.Name
		if len(name) > room {
			name = name[:room]
		}
		b.WriteString(name)
		b.WriteString(strings.Repeat(" ", room-len(name)))
		b.WriteByte('|')
		s += p.Mem
	}
	return b.String()
}

// SlotRuler is the line above a drawing that numbers the memory slots.
func SlotRuler() string {
	var b strings.Builder
	b.WriteByte(' ')
	for s := 0; s < Slots; s++ {
		n := string(rune('0' + s))
		b.WriteString(n)
		b.WriteString(strings.Repeat(" ", slotWidth-len(n)))
	}
	return strings.TrimRight(b.String(), " ")
}
