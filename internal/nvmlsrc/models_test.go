package nvmlsrc

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/mig"
)

// TestFakeModelsAreKeyedByTheCatalog: a fake GPU of a model MIG's catalog knows is named
// by the catalog's key (a board of another form factor adds it: -pcie), so one name
// means one model in a fake node and in `gpumemctl mig plan --model`; and a catalog key
// used here is that model, its memory within 1%.
func TestFakeModelsAreKeyedByTheCatalog(t *testing.T) {
	for key, cfg := range FakeModels {
		base := strings.TrimSuffix(key, "-pcie")
		if m, err := mig.Lookup(strings.TrimPrefix(cfg.Name, "Mock ")); err == nil && base != m.Key {
			t.Errorf("fake model %q (%s) is the catalog's %q: key it so", key, cfg.Name, m.Key)
		}
		byKey, err := mig.Lookup(base)
		if err != nil {
			if strings.Contains(key, "-") {
				t.Errorf("fake model %q is named like a catalog key, which the catalog does not know", key)
			}
			continue
		}
		if d := int64(cfg.MemoryMB) - byKey.MemoryMiB; d*100 > byKey.MemoryMiB || -d*100 > byKey.MemoryMiB {
			t.Errorf("fake model %q has %d MiB; the catalog's %s %d", key, cfg.MemoryMB, byKey.Key, byKey.MemoryMiB)
		}
	}
	for old, now := range renamedModels {
		if _, ok := FakeModels[now]; !ok {
			t.Errorf("%q renamed to %q, which is no fake model", old, now)
		}
		if _, err := DecodeFake([]byte(`{"gpus": [{"model": "` + old + `"}]}`)); err == nil || !strings.Contains(err.Error(), `"`+now+`"`) {
			t.Errorf("a fake node with model %q: %v; want it told %q", old, err, now)
		}
	}
}
