package mig

import "testing"

func TestDrawShowsEachInstanceAcrossItsSlots(t *testing.T) {
	m, err := Lookup("a100-40gb")
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4": "|2g.10gb        |1g.5gb |1g.5gb |3g.20gb                        |",
		"3g.20gb@4":                             "|.......|.......|.......|.......|3g.20gb                        |",
		"7g.40gb@0":                             "|7g.40gb                                                        |",
		"":                                      "|.......|.......|.......|.......|.......|.......|.......|.......|",
		"3g.20gb@4,3g.20gb@4":                   "3g.20gb@4,3g.20gb@4", // invalid: drawn as text
	} {
		l, err := ParseLayout(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Draw(l); got != want {
			t.Errorf("%q:\n got %s\nwant %s", in, got, want)
		}
	}
	// Each slot's number stands over the slot's first character.
	if r := SlotRuler(); r != " 0       1       2       3       4       5       6       7" {
		t.Errorf("ruler %q", r)
	}
}
