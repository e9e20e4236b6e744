/* The release table's gates (internal/slurmrel/releases.txt), for the plugins' C.
 * Printed by `go run ./cmd/slurm-release cheader`: edit the table, not this file
 * (a unit test checks that the two agree). */
#ifndef GPUMEM_GATES_H
#define GPUMEM_GATES_H

#include <slurm/slurm_version.h>

/* job_modify() gets err_msg, so a refused update can say why */
#define GPUMEM_JOBMODIFY_ERRMSG (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0))
/* srun, sbatch and salloc take --tres-per-task */
#define GPUMEM_TRES_PER_TASK (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0))
/* slurmctld saves a node's GRES with its GPUs, so a restart never shows shards without them (commit a54f9cff) */
#define GPUMEM_GRES_STATE_SAVED (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0))
/* sacctmgr modify job keeps an AdminComment's case (22.05 lowercases all of it) */
#define GPUMEM_SACCTMGR_KEEPS_CASE (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0))
/* gres/shard and gres/mps leave a MultipleFiles record whole (SchedMD bug 17482) */
#define GPUMEM_MULTIPLE_FILES (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 7))
/* a job's TRES name GRES gres/NAME (gres:NAME before) */
#define GPUMEM_TRES_GRES_SLASH (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0))
/* scontrol reconfigure makes slurmctld exec a new one, which reads gres.conf and slurm.conf */
#define GPUMEM_RECONFIGURE_EXECS (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0))
/* PrologFlags=RunInJob: the Prolog runs in the job's extern step's cgroup */
#define GPUMEM_PROLOG_RUNINJOB (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0))
/* a RunInJob Epilog always starts as root: 24.05 to 25.11 end X11 forwarding in the extern step's slurmstepd itself, whose ids an Epilog started then keeps (the job user's) */
#define GPUMEM_EPILOG_AS_ROOT (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0))
/* CgroupPlugin=disabled: slurmd loads no cgroup plugin */
#define GPUMEM_CGROUP_DISABLED (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0))
/* an update may turn a job's shard into gpu and back (22.05: "Invalid generic resource") */
#define GPUMEM_UPDATE_SWAPS_GRES (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0))
/* per-GPU shard types place jobs right (checked from the 24.11 lab on; 22.05 does not) */
#define GPUMEM_TYPED_SHARDS (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0))
/* job_desc_msg_t names its job by step_id, no job_id */
#define GPUMEM_JOBDESC_STEP_ID (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0))
/* submit_response_msg_t names the job by step_id, no job_id */
#define GPUMEM_SUBMIT_RESPONSE_STEP_ID (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0))
/* slurm_load_job() names the job by a slurm_step_id_t */
#define GPUMEM_LOAD_JOB_STEP_ID (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0))
/* --gres=gpu:N and --gpus-per-node are exclusive */
#define GPUMEM_GPUS_EXCLUSIVE (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0))
/* cgroup/v2 names a job's directory by its SLUID unless CgroupJobIdPaths=yes */
#define GPUMEM_CGROUP_SLUID (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0))

#endif
