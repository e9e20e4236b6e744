package health

import (
	"context"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// XIDEvent is one XID error reported by NVML.
type XIDEvent struct {
	GPU int
	XID int
	At  time.Time
}

// WatchXIDs registers every GPU for NVML's critical-XID events and sends each event to
// out until ctx ends. NVML delivers XIDs only through an event set, so this is the one
// goroutine of the sidecar that waits on NVML; it wakes every wait to notice ctx. It
// returns an error at once when no GPU can be watched (a backend without events).
func WatchXIDs(ctx context.Context, lib nvml.Interface, wait time.Duration, out chan<- XIDEvent) error {
	var set nvml.EventSet
	err := nvmlsrc.Guard(func() error {
		var ret nvml.Return
		set, ret = lib.EventSetCreate()
		return nvmlsrc.Err(ret, "event set")
	})
	if err != nil {
		return err
	}
	watched, err := register(lib, set)
	if watched == 0 {
		_ = nvmlsrc.Guard(func() error { set.Free(); return nil })
		return fmt.Errorf("no GPU accepts XID events: %v", err)
	}
	go func() {
		defer nvmlsrc.Guard(func() error { set.Free(); return nil })
		backoff := wait
		for ctx.Err() == nil {
			var ev nvml.EventData
			var ret nvml.Return
			if nvmlsrc.Guard(func() error { ev, ret = set.Wait(uint32(wait.Milliseconds())); return nil }) != nil {
				return
			}
			if ret != nvml.SUCCESS && ret != nvml.ERROR_TIMEOUT {
				// An error that returns at once (a GPU gone, the driver unloading) must
				// not turn the wait into a spin: back off, up to a minute.
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Minute)
				continue
			}
			backoff = wait
			if ret != nvml.SUCCESS || ev.EventType&nvml.EventTypeXidCriticalError == 0 {
				continue
			}
			idx := -1
			_ = nvmlsrc.Guard(func() error { idx, _ = ev.Device.GetIndex(); return nil })
			select {
			case out <- XIDEvent{GPU: idx, XID: int(ev.EventData), At: time.Now()}:
			case <-ctx.Done():
			}
		}
	}()
	return nil
}

func register(lib nvml.Interface, set nvml.EventSet) (int, error) {
	var n int
	var last error
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return 0, nvmlsrc.Err(ret, "device count")
	}
	for i := 0; i < count; i++ {
		err := nvmlsrc.Guard(func() error {
			dev, ret := lib.DeviceGetHandleByIndex(i)
			if ret != nvml.SUCCESS {
				return nvmlsrc.Err(ret, fmt.Sprintf("GPU %d handle", i))
			}
			return nvmlsrc.Err(dev.RegisterEvents(nvml.EventTypeXidCriticalError, set), fmt.Sprintf("GPU %d XID events", i))
		})
		if err != nil {
			last = err
			continue
		}
		n++
	}
	return n, last
}
