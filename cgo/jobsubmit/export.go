package main

import "C"

import (
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/gpumem/gpumem/cgo/shim"
	"github.com/gpumem/gpumem/internal/plugin"
)

// current is the plugin between Slurm's init() and fini(). From 23.02 slurmctld calls
// job_submit from several threads at once, so it is swapped and read atomically; the
// plugin itself is safe under concurrent calls. Go globals survive an unload and reload
// (the library is never really unloaded), so init() starts afresh.
var current atomic.Pointer[plugin.Plugin]

//export gpumemInit
func gpumemInit(haveAllocator C.int) C.int {
	if n := shim.GoProcs(os.Getenv("GOMAXPROCS"), runtime.NumCPU()); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	p := shim.Open("job_submit/gpumem", shim.Sink{}, haveAllocator != 0, "slurm_xstrdup/slurm_xfree")
	if old := current.Swap(p); old != nil {
		old.Close()
	}
	return 0
}

//export gpumemPins
func gpumemPins() C.int {
	if p := current.Load(); p != nil && p.Pins() {
		return 1
	}
	return 0
}

//export gpumemFini
func gpumemFini() {
	if p := current.Swap(nil); p != nil {
		p.Close()
	}
}

//export gpumemDecide
func gpumemDecide(job unsafe.Pointer) C.int {
	if p := current.Load(); p != nil {
		return C.int(shim.Decide(job, p.Submit, p.SubmitPinned))
	}
	return 0
}

//export gpumemModify
func gpumemModify(job unsafe.Pointer) C.int {
	if p := current.Load(); p != nil {
		return C.int(shim.Modify(job, p.Modify))
	}
	return 0
}
