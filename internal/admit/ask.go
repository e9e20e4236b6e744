package admit

import (
	"errors"
	"strings"

	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/request"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// ask is a job's GPU-memory request, read from its TRES strings.
type ask struct {
	mib    int64
	gpus   int64
	perJob bool
	// perTask is the GPUs each task gets (--gpus-per-task), 0 when the count is not per
	// task; gpus is then that times the job's tasks, counted as for --gpus.
	perTask int64
	// only names the user's options that count GPUs as Slurm does (j.GPUsOnly, or
	// --gpus-per-task): shards, which Slurm does not count as GPUs, cannot serve them.
	only   string
	model  string // GPU type the user pinned with gpu:TYPE:N; "" if none
	size   string // the size as the user wrote it, for messages
	prefix string
	fields [4]request.TRES
}

// mentionsMem keeps every job without a gpu:mem entry away from parsing, so gpumem never
// refuses a job that is not its own (request.AsksMem).
func mentionsMem(j Job) bool {
	return request.AsksMem(j.TresPerNode, j.TresPerJob, j.TresPerSocket, j.TresPerTask)
}

// userValue is a --gpus* option's value as the user wrote it: the entry without the
// gres prefix and "gpu:" that Slurm (or cli_filter, building the same fields) puts
// before it, which users never see.
func userValue(raw string) string {
	if v, ok := slurmgres.CutGPU(raw); ok {
		return v
	}
	return slurmgres.Strip(raw)
}

// shardable says whether shards may serve q: one GPU, of no pinned type, for a job that
// does not count GPUs as Slurm does.
func (q *ask) shardable() bool { return q.gpus == 1 && q.model == "" && q.only == "" }

// readAsk parses the four strings into q; false when none holds gpu:mem after all.
func readAsk(j Job, q *ask) (bool, error) {
	q.gpus, q.only = 1, j.GPUsOnly
	raw := [4]string{j.TresPerNode, j.TresPerJob, j.TresPerSocket, j.TresPerTask}
	names := [4]string{request.PerNode, request.PerJob, request.PerSocket, request.PerTask}
	found, counted, memInJob, countInJob := false, false, false, false
	for i := range raw {
		if i >= 2 && !strings.Contains(raw[i], "gpu") {
			continue // nothing there for gpumem; these fields are never rewritten
		}
		t, err := request.Parse(names[i], raw[i])
		if err != nil {
			return false, err
		}
		q.fields[i] = t
		for _, e := range t.Entries {
			switch {
			case e.Kind == request.GPUMem && i >= 2:
				return false, errors.New(refusal.MemNotPerGPU(names[i], userValue(e.Raw)))
			case e.Kind == request.GPUMem && found:
				return false, errors.New(refusal.MemTwice())
			case e.Kind == request.GPUMem:
				found, q.mib, q.prefix, memInJob = true, e.MiB, e.Prefix, i == 1
				q.size = e.Raw[strings.LastIndexByte(e.Raw, ':')+1:]
			case e.Kind == request.GPUCount && i == 2:
				return false, errors.New(refusal.SocketCount(names[i], userValue(e.Raw)))
			case e.Kind == request.GPUCount && counted:
				return false, errors.New(refusal.CountTwice())
			case e.Kind == request.GPUCount && i == 3:
				counted, q.perTask, q.model, countInJob = true, e.GPUs, e.Type, true
				q.gpus = e.GPUs * max(int64(j.Tasks), int64(j.MinNodes), 1)
				if q.gpus > request.MaxGPUs {
					return false, errors.New(refusal.PerTaskTooMany(userValue(e.Raw), j.Tasks, request.MaxGPUs))
				}
				q.only = refusal.JoinOptions("--gpus-per-task", q.only)
			case e.Kind == request.GPUCount:
				counted, q.gpus, q.model, countInJob = true, e.GPUs, e.Type, i == 1
			}
		}
	}
	if !found {
		return false, nil
	}
	// A native slice of a GPU next to gpu:mem asks for GPU memory twice; which one was
	// meant cannot be guessed, and dropping either runs the job on the wrong slice.
	for i := 0; i < 2; i++ {
		for _, e := range q.fields[i].Entries {
			body := slurmgres.Strip(e.Raw)
			if name := slurmgres.Name(body); e.Kind == request.Other && (name == slurmgres.Shard || name == "mps") {
				return false, errors.New(refusal.SliceTwice(q.size, body))
			}
		}
	}
	// The count says per node or per job; without one, where gpu:mem was written does.
	q.perJob = memInJob
	if counted {
		q.perJob = countInJob
	}
	return true, nil
}
