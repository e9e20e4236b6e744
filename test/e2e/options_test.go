//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/test/matrix"

	"github.com/gpumem/gpumem/internal/slurmrel"
)

// Options that Slurm ties to GPUs, beside gpu:mem: each runs as meant, or is refused at
// submit in gpumem's words, never with Slurm's internal forms or errors, and never left
// pending for ever (a cell's time limit fails it).

// optionRuns runs srun, sbatch and salloc with args and gpu:mem, and wants each to run.
func optionRuns(t *testing.T, size string, args ...string) {
	for _, cmd := range matrix.Commands {
		c := matrix.Cell{Command: cmd, Value: args, Size: size}
		t.Run(c.Key(), func(t *testing.T) {
			clean(t)
			if r := runCell(t, c, "gpumem-options", 90*time.Second); r.Outcome != matrix.Ran {
				t.Errorf("%s: %s: %s", strings.Join(c.Argv("gpumem-options"), " "), r.Outcome, r.Detail)
			}
		})
	}
}

// TestOptionGPUsPerTask: --gpus-per-task=1 -n2 with gpu:mem gives each task a GPU that
// holds it (it was refused with the internal form "gres:gpu:1" in the text); where no
// two such GPUs are, the refusal names the user's options.
func TestOptionGPUsPerTask(t *testing.T) {
	optionRuns(t, "10g", "--gpus-per-task=1", "-n2")
	if has(slurmrel.TRESPerTask) {
		optionRuns(t, "10g", "--tres-per-task=gres/gpu:1", "-n2")
	}
	for _, cmd := range []string{"srun", "sbatch"} {
		refusedAtSubmit(t, cmd, []string{"--gpus-per-task=1", "-n3", "--gres=gpu:mem:60g"}, "--gpus-per-task=1 for 3 tasks")
		refusedAtSubmit(t, cmd, []string{"--gpus-per-socket=1", "--gres=gpu:mem:10g"}, "--gpus-per-socket=1 cannot be combined with --gres=gpu:mem")
	}
}

// TestOptionNTasksPerGPU: --ntasks-per-gpu=2 ended in Slurm's "Invalid generic resource
// (gres) specification", the job having become a shard job, which Slurm counts as no GPU.
func TestOptionNTasksPerGPU(t *testing.T) { optionRuns(t, "10g", "--ntasks-per-gpu=2") }

// TestOptionMemPerGPU: --mem-per-gpu=2G ended in "mem_per_tres ... did not request any
// GPU" for the same reason; --cpus-per-gpu likewise.
func TestOptionMemPerGPU(t *testing.T) {
	optionRuns(t, "10g", "--mem-per-gpu=2G")
	optionRuns(t, "10g", "--cpus-per-gpu=2")
}

// TestOptionExclusive: --exclusive with gpu:mem was a shard job that Slurm 22.05 never
// starts (it pended with reason Resources on an idle lab); it gets whole GPUs or MIG now
// and runs, on every partition.
func TestOptionExclusive(t *testing.T) {
	optionRuns(t, "10g", "--exclusive")
	optionRuns(t, "10g", "--exclusive", "-p", "inference")
	optionRuns(t, "4g", "--exclusive", "-w", "n2")
}

// TestOptionReservation: a job with --reservation is admitted against the reservation's
// nodes (here n3's L4s), not its partition's: 60g, which only n1 holds, was accepted
// and could never start; it is refused naming the reservation, and what fits runs.
func TestOptionReservation(t *testing.T) {
	clean(t)
	withReservation(t, func() {
		for _, cmd := range []string{"srun", "sbatch"} {
			refusedAtSubmit(t, cmd, []string{"--reservation=" + matrix.Reservation, "--gres=gpu:mem:60g"},
				"(the job may use only the nodes of reservation "+matrix.Reservation+": n3)")
		}
		optionRuns(t, "10g", "--reservation="+matrix.Reservation)
	})
}
