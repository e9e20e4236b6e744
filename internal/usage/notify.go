package usage

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// Notifier delivers warnings to jobs with `scontrol notify JOB MSG`: Slurm writes them
// to the job's srun, salloc or batch output as the job's own daemons, so gpumemd opens
// nothing of a job's and a job whose output is a FIFO, a read-only file or a terminal
// only affects itself. Messages go through a small queue to one goroutine, so a
// notify that hangs (each is bounded by the runner's timeout) never holds the poll; when
// the queue is full a message is dropped and counted.
type Notifier struct {
	Scontrol slurmcli.Runner
	Log      *slog.Logger

	// Dropped counts messages that found the queue full.
	Dropped atomic.Uint64
	queue   chan [2]string
}

// notifyQueue is how many warnings may wait; a poll warns each job once.
const notifyQueue = 64

// Start runs the delivery goroutine until ctx ends. Tell before Start drops.
func (n *Notifier) Start(ctx context.Context) (done <-chan struct{}) {
	n.queue = make(chan [2]string, notifyQueue)
	q := n.queue
	d := make(chan struct{})
	go func() {
		defer close(d)
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-q:
				if _, err := n.Scontrol.Run(ctx, slurmcli.NotifyArgs(m[0], m[1])...); err != nil && n.Log != nil {
					n.Log.Warn("cannot tell the job through scontrol notify", "job", m[0], "err", err)
				}
			}
		}
	}()
	return d
}

// Tell queues msg for job and returns at once.
func (n *Notifier) Tell(job, msg string) {
	select {
	case n.queue <- [2]string{job, msg}:
	default:
		n.Dropped.Add(1)
	}
}
