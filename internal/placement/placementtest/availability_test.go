package placementtest

import (
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
)

func TestAvailability(t *testing.T) {
	s := placement.NewState([]placement.Node{{Name: "n", CPU: 8, Mem: 100, Pools: []string{"p"}, Devices: []placement.Device{{Model: "h100", Capacity: 81559, Shareable: true}}}})
	big := placement.Demand{GPUs: 1, Units: 60000, Kinds: placement.Shard, CPU: 1}
	if f := Availability(s, placement.BestFit{}, &big); f != Now {
		t.Fatalf("empty cluster: %v", f)
	}
	c, _ := placement.BestFit{}.Place(s, &big)
	if err := s.Commit(c, &big); err != nil {
		t.Fatal(err)
	}
	if f := Availability(s, placement.BestFit{}, &big); f != WhenDrained {
		t.Errorf("after taking 60000 of 81559 units: %v, want %v", f, WhenDrained)
	}
	for _, d := range []placement.Demand{{GPUs: 1, Units: 90000}, {GPUs: 2, Units: 1}, {CPU: 9}, {Pools: []string{"q"}}, {GPUs: 1, Units: 1, Models: []string{"a100"}}} {
		if f := Availability(s, placement.FirstFit{}, &d); f != Never {
			t.Errorf("%+v: %v, want %v", d, f, Never)
		}
	}
}
