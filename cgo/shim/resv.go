package shim

/*
#cgo LDFLAGS: -ldl
#include "../include/gpumem_resv.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gpumem/gpumem/internal/plugin"
)

// Reservations is the plugins' plugin.ReservationSource: Slurm's reservations through
// the program's libslurm, one RPC.
func Reservations() (map[string]string, error) {
	var rc C.int
	s := C.gpumem_resv_list(&rc)
	if s == nil {
		if rc == -1 {
			return nil, fmt.Errorf("this program exports no slurm_load_reservations")
		}
		return nil, fmt.Errorf("slurm_load_reservations: Slurm error %d", int(rc))
	}
	defer C.free(unsafe.Pointer(s))
	return plugin.ParseReservations(C.GoString(s)), nil
}
