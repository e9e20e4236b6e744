package admit

import (
	"errors"
	"maps"
	"slices"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// A pending job can be changed with scontrol update. A new gpu:mem is decided like a new
// job, for the job's own partitions and shape (Job.Keep narrows it where Slurm refuses a
// change of GRES name); a change of partition, features or nodes alone leaves the native
// GRES the job was given at submit, which must still run under the new shape (Holds).

// gresName is the GRES a form is written as: shard, or gpu (MIG profile, GPU type).
func gresName(k placement.Kind) string {
	if k == placement.Shard {
		return slurmgres.Shard
	}
	return slurmgres.GPU
}

// heldName is the GRES name ("shard" or "gpu") of the native GRES a job holds, "" when it
// holds neither.
func heldName(tres string) string {
	for _, e := range slurmgres.Split(tres) {
		if name := slurmgres.Name(e); name == slurmgres.Shard || name == slurmgres.GPU {
			return name
		}
	}
	return ""
}

// keepRefusal: the forms that serve the new size all change the job's GRES name, which
// this Slurm refuses for a pending job.
func (a *Admitter) keepRefusal(q *ask, sh *shape, serving []string) error {
	return errors.New(refusal.KeepGRES(q.words(sh), serving, sh.held))
}

// Holds checks that the native GRES a job holds (gpu:TYPE:N or shard:N, per node or per
// job) can run on the nodes its partitions, features and node lists leave it: an error,
// for the user, says why not and where it would run. GRES gpumem does not know (another
// name, an untyped gpu count, a type no node has under that name) is Slurm's to judge.
func (a *Admitter) Holds(j Job) error {
	a = a.unfencedTwin() // whether the job can run at all, not whether gpumem would give it that slice
	sh, err := a.shapeOf(&j)
	if err != nil {
		return err
	}
	cands := j.Partitions
	if len(cands) == 0 {
		cands = a.defaults
	}
	ps := a.resolve(cands, nil)
	for i, tres := range []string{j.TresPerNode, j.TresPerJob} {
		for _, e := range slurmgres.Split(tres) {
			body := slurmgres.Strip(e)
			q, o, ok := a.heldForm(body, i == 1)
			if !ok {
				continue
			}
			if _, fits := a.reach(&q, &sh, ps, &o, nil); fits {
				continue
			}
			var elsewhere []string
			for _, name := range a.names {
				if _, fits := a.reach(&q, &sh, a.resolve([]string{name}, nil), &o, nil); fits {
					elsewhere = append(elsewhere, name)
				}
			}
			return errors.New(refusal.HeldNowhere(body, cands, sh.words(), elsewhere))
		}
	}
	return nil
}

// heldForm reads one native GRES entry gpumem writes (shard:N, gpu:TYPE:N) as the ask and
// form it stands for; false for anything else.
func (a *Admitter) heldForm(body string, perJob bool) (ask, option, bool) {
	it, err := slurmgres.Parse(body)
	n := it.Count
	if err != nil || !it.Counted || n < 1 || it.Detail != "" {
		return ask{}, option{}, false
	}
	switch {
	case it.Name == slurmgres.Shard && it.Type == "" && !perJob:
		mib := n * a.opt.ShardUnitMiB
		return ask{mib: mib, gpus: 1}, option{kind: placement.Shard, mib: mib}, true
	case it.Name == slurmgres.GPU && it.Type != "":
		// The smallest device of that name anywhere: the job may have been given any.
		var o option
		for _, p := range a.ix.parts {
			for _, m := range p.members {
				for _, u := range m.g.cfg.units {
					if u.name == it.Type && (o.mib == 0 || u.mib < o.mib) {
						o = option{kind: u.kind, name: u.name, mib: u.mib}
					}
				}
			}
		}
		if o.mib == 0 {
			return ask{}, option{}, false
		}
		return ask{mib: o.mib, gpus: n, perJob: perJob}, o, true
	}
	return ask{}, option{}, false
}

// words is the shape's options, for a message; "" when the job has none.
func (s *shape) words() string {
	return refusal.Shape(s.nodes, s.req, slices.Sorted(maps.Keys(s.exc)), s.features)
}
