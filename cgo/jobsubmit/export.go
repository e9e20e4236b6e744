package main

import "C"

import (
	"unsafe"

	"github.com/gpumem/gpumem/cgo/shim"
	"github.com/gpumem/gpumem/internal/plugin"
)

// current is the plugin between Slurm's init() and fini(). slurmctld calls job_submit
// under its job write lock, one job at a time, so no lock is needed. Go globals survive
// an unload and reload (the library is never really unloaded), so init() starts afresh.
var current *plugin.Plugin

//export gpumemInit
func gpumemInit(haveAllocator C.int) C.int {
	current = shim.Open("job_submit/gpumem", shim.Sink{}, haveAllocator != 0, "slurm_xstrdup/slurm_xfree")
	return 0
}

//export gpumemPins
func gpumemPins() C.int {
	if p := current; p != nil && p.Pins() {
		return 1
	}
	return 0
}

//export gpumemFini
func gpumemFini() { current = nil }

//export gpumemDecide
func gpumemDecide(job unsafe.Pointer) C.int {
	if p := current; p != nil {
		return C.int(shim.Decide(job, p.Submit, p.SubmitPinned))
	}
	return 0
}
