/* The one structure that crosses between the C shims and Go. Slurm's own structures
 * never reach Go, so the Go side is the same for every Slurm release; only the shims are
 * compiled against a release's slurm.h. Each plugin gives the slots its own meaning. */
#ifndef GPUMEM_JOB_H
#define GPUMEM_JOB_H

#include <stdint.h>

/* job_submit: the job_desc fields (req_nodes: the required node list, which only
 * pinning a shard job to one GPU writes). */
enum { GPUMEM_PER_NODE, GPUMEM_PER_JOB, GPUMEM_PER_SOCKET, GPUMEM_PER_TASK, GPUMEM_PARTITION, GPUMEM_REQ_NODES };

/* cli_filter: the client options by the names slurm_option_get takes, then (read only)
 * the tres_per_node and tres_per_job of the job a step runs in. */
enum {
	GPUMEM_OPT_GRES, GPUMEM_OPT_GPUS, GPUMEM_OPT_GPUS_PER_NODE, GPUMEM_OPT_GPUS_PER_SOCKET,
	GPUMEM_OPT_GPUS_PER_TASK, GPUMEM_OPT_PARTITION, GPUMEM_OPT_NOPTS,
	GPUMEM_STEP_JOB_PER_NODE = GPUMEM_OPT_NOPTS, GPUMEM_STEP_JOB_PER_JOB
};

#define GPUMEM_SLOTS 8

struct gpumem_job {
	const char *in[GPUMEM_SLOTS]; /* borrowed from Slurm; NULL when unset */
	uint32_t job_id;              /* cli_filter: the job a step runs in, else 0 */
	int changed[GPUMEM_SLOTS];    /* 1: replace slot i with out[i] (NULL: unset it) */
	char *out[GPUMEM_SLOTS];      /* malloc'd by Go; the shim copies and frees */
	char *refusal;                /* malloc'd by Go; non-NULL refuses the job */
	int64_t fresh_ns;             /* job_submit: how long the same in[] get the same answer */
	int pin;                      /* job_submit: 1 for a new job, which may be pinned to a GPU */
};

#endif
