package gresconf

import (
	"context"

	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmrel"
)

// DetectRelease asks slurmd (bin, or slurmd in PATH) for its version. ErrNoSlurmd
// means none is installed.
func DetectRelease(bin string) (slurmrel.Version, error) {
	v, err := slurmcli.Slurmd{Path: bin}.Version(context.Background())
	if err != nil {
		return slurmrel.Version{}, err
	}
	return slurmrel.ParseVersion(v)
}

// splitsMultipleFiles says whether release r breaks MultipleFiles records apart (before
// the release table's multiple-files gate): its gres/shard and gres/mps split every gpu
// record into one record per device file on every node, so a MIG instance written as
// MultipleFiles=/dev/nvidia0,capG,capC reaches slurmctld as three one-count GPUs;
// slurmctld keeps only as many device bits as slurm.conf counts, in record order, and
// the later MIG types end up with none (a job then gets `gpu:TYPE:0(IDX:)`). The zero
// release stands for a current Slurm, which does not.
func splitsMultipleFiles(r slurmrel.Version) bool {
	return !slurmrel.Table().Has(r, slurmrel.MultipleFiles)
}

// savesGresTopology says whether release r's slurmctld saves a node's GRES topology (the
// gres-state-saved gate): slurmd reports every shard with the Type of the gpu on its
// File, and a controller that restored the topology (a backup taking over) drains a node
// whose Gres= counts its shards untyped: "gres/shard type (h100) reported but not
// configured", seen on 24.11 and on 23.11. So there Gres= counts shards by that type.
func savesGresTopology(r slurmrel.Version) bool {
	return slurmrel.Table().Has(r, slurmrel.GresStateSaved)
}

// typedShardsWork says whether release r was checked to place jobs on per-GPU shard
// types (Options.ShardTypes) correctly: the typed-shards gate. On 22.05 they do not: once
// a node's jobs use shards of two types, slurmctld starts further shard jobs there with
// no shards at all (GRES=(null), or shard:TYPE:0(IDX:)), as if they had asked none.
func typedShardsWork(r slurmrel.Version) bool {
	return slurmrel.Table().Has(r, slurmrel.TypedShards)
}
