package fence

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// The hook runs where the limit can be set in two ways only: gpumemd's Prolog with
// RunInJob, or the required SPANK plugin with Contain (or RunInJob); anything else
// says why not, and the SPANK configuration is read only when the Prolog does not do.
func TestHookProblem(t *testing.T) {
	yes := func() (bool, error) { return true, nil }
	no := func() (bool, error) { return false, nil }
	missing := func() (bool, error) { return false, fs.ErrNotExist }
	broken := func() (bool, error) { return false, errors.New("plugstack.conf: includes nested deeper than 8") }
	for _, c := range []struct {
		name              string
		prolog            string
		contain, runInJob bool
		spank             func() (bool, error)
		want              string // "" or a part of the reason
	}{
		{"prolog in the job", "/usr/sbin/gpumemd-prolog", true, true, nil, ""},
		{"gpumem-prolog in the job", "/etc/slurm/gpumem-prolog", false, true, nil, ""},
		{"another prolog", "/usr/sbin/site-prolog", true, true, no, "nothing sets the limit"},
		{"prolog without RunInJob", "/usr/sbin/gpumemd-prolog", true, false, no, "nothing sets the limit"},
		{"spank with Contain", "", true, false, yes, ""},
		{"spank with RunInJob", "", false, true, yes, ""},
		{"spank without Contain", "", false, false, yes, "lack Contain"},
		{"no plugstack.conf", "", true, false, missing, "required in /etc/slurm/plugstack.conf"},
		{"unreadable plugstack.conf", "", true, false, broken, "nor a readable plugstack.conf: plugstack.conf: includes"},
	} {
		spank := c.spank
		if spank == nil {
			spank = func() (bool, error) { t.Errorf("%s: plugstack.conf read", c.name); return false, nil }
		}
		got := HookProblem(Hooks{Prolog: c.prolog, Contain: c.contain, RunInJob: c.runInJob, PlugStack: "/etc/slurm/plugstack.conf", Spank: spank})
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q; want %q", c.name, got, c.want)
		}
	}
}

func TestPromisedAndHeld(t *testing.T) {
	if Promised([]inventory.GPU{{Fence: inventory.FenceNone}, {Fence: inventory.FenceMPS}}) || Promised(nil) {
		t.Error("a node without a driver fence promised one")
	}
	if !Promised([]inventory.GPU{{Fence: inventory.FenceNone}, {Fence: inventory.FenceDriver}}) {
		t.Error("a node with a driver fence promised none")
	}
	for _, c := range []struct {
		r    Record
		want string
	}{
		{Record{Fence: inventory.FenceDriver}, inventory.FenceDriver},
		{Record{Fence: inventory.FenceHardware}, inventory.FenceHardware},
		{Record{Fence: NoGPUs}, ""},
		{Record{Fence: inventory.FenceDriver, Failed: "fence: GPU 1: not supported"}, ""},
	} {
		if got := c.r.Held(); got != c.want {
			t.Errorf("%+v: Held %q; want %q", c.r, got, c.want)
		}
	}
}
