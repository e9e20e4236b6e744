package main

import "C"

import (
	"unsafe"

	"github.com/gpumem/gpumem/cgo/shim"
	"github.com/gpumem/gpumem/internal/plugin"
)

// current is the plugin between init() and the client's exit; a client is one thread.
var current *plugin.Plugin

//export gpumemCliInit
func gpumemCliInit(usable C.int) C.int {
	current = shim.Open("cli_filter/gpumem", shim.Sink{Client: true}, usable != 0, "slurm_option_get/set/reset/isset, slurm_load_job or slurm_xstrdup/xfree")
	return 0
}

//export gpumemCliDecide
func gpumemCliDecide(job unsafe.Pointer) C.int {
	if p := current; p != nil {
		return C.int(shim.DecideOptions(job, p.SubmitOptions))
	}
	return 0
}

//export gpumemCliError
func gpumemCliError(msg *C.char) { shim.Sink{}.Error(C.GoString(msg)) }
