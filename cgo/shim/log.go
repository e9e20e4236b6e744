// Package shim is the Go half of the C shims that Slurm loads: the one struct that
// crosses between them, and the log. Messages go to the log of the Slurm program that
// loaded the plugin (slurmctld, srun, sbatch, salloc), through the program's own slurm_error,
// slurm_info and slurm_debug. They are found with dlsym at first use rather than linked,
// so the plugins load in any Slurm release and tests link without Slurm at all; when the
// functions are absent the messages go to stderr.
package shim

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*gpumem_logfn)(const char *fmt, ...);

static void gpumem_log(int level, const char *msg) {
	static const char *names[] = {"slurm_error", "slurm_info", "slurm_debug"};
	static gpumem_logfn fns[3];
	static int looked[3];
	if (level < 0 || level > 2)
		level = 0;
	if (!looked[level]) {
		fns[level] = (gpumem_logfn)dlsym(RTLD_DEFAULT, names[level]);
		looked[level] = 1;
	}
	// "%s": a message may hold user text with % in it.
	if (fns[level])
		fns[level]("%s", msg);
	else
		fprintf(stderr, "%s\n", msg);
}
*/
import "C"

import "unsafe"

// Sink writes to the Slurm log; it satisfies plugin.Sink. In a client (srun, sbatch,
// salloc) the log is the user's terminal, so only errors, which the user must read, are
// shown there; the rest waits for -v.
type Sink struct{ Client bool }

func (Sink) Error(msg string) { write(0, msg) }
func (Sink) Debug(msg string) { write(2, msg) }

func (s Sink) Info(msg string) {
	if s.Client {
		write(2, msg)
		return
	}
	write(1, msg)
}

func write(level C.int, msg string) {
	cs := C.CString(msg)
	C.gpumem_log(level, cs)
	C.free(unsafe.Pointer(cs))
}
