// Command jobsubmit is job_submit/gpumem, the job_submit plugin slurmctld loads from
// job_submit_gpumem.so: it rewrites gpu:mem requests into the native GRES the placement
// core chooses and refuses those that can never fit. Build it with cgo/build.sh.
package main

// The ABI symbols live here, in a file without //export: cgo compiles the preamble of a
// file with exports twice, which would define them twice.

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../include
#cgo LDFLAGS: -ldl
#include <string.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include "gpumem_copy.h"
#include "gpumem_cache.h"

const char plugin_name[] = "gpumem: GPU memory requests to native GRES";
const char plugin_type[] = "job_submit/gpumem";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

extern int gpumemInit(int have_allocator);
extern int gpumemPins(void);
extern void gpumemFini(void);
extern int gpumemDecide(void *job);

static struct gpumem_cache cache = {.mu = PTHREAD_MUTEX_INITIALIZER};
static int pins; // gpumem.conf ShardTypes = per-gpu: new shard jobs go to Go, uncached

int init(void)
{
	gpumem_cache_reset(&cache);
	int rc = gpumemInit(gpumem_alloc_init() == 0);
	pins = gpumemPins();
	return rc;
}

int fini(void)
{
	gpumemFini();
	gpumem_cache_reset(&cache);
	return SLURM_SUCCESS;
}

// gpumem_num is a job_desc number for Go: 0 where Slurm holds its "unset" value.
static uint32_t gpumem_num(uint32_t v, uint32_t unset)
{
	return v == unset ? 0 : v;
}

// gpumem_desc decides a new job (pin = 1: job_submit) or a change to one (job_modify,
// which is never pinned, so that gpumemctl steer can take a pin back). Go decides
// whether and where a job is pinned; the shim only copies the job's fields to it.
static int gpumem_desc(job_desc_msg_t *desc, char **err_msg, int pin)
{
	char **fields[GPUMEM_WRITABLE] = {
		&desc->tres_per_node, &desc->tres_per_job,
		&desc->tres_per_socket, &desc->tres_per_task, &desc->partition, &desc->req_nodes,
	};
	struct gpumem_job j;
	int rc = SLURM_SUCCESS;

	if (gpumem_alloc_init() != 0)
		return SLURM_SUCCESS; // said at init; leaving the job alone is all that is safe
	memset(&j, 0, sizeof(j));
	for (int i = 0; i < GPUMEM_WRITABLE; i++)
		j.in[i] = *fields[i];
	j.in[GPUMEM_EXC_NODES] = desc->exc_nodes;
	j.in[GPUMEM_FEATURES] = desc->features;
	j.in[GPUMEM_RESERVATION] = desc->reservation;
	j.in[GPUMEM_ARRAY_INX] = desc->array_inx;
	j.num[GPUMEM_MIN_NODES] = gpumem_num(desc->min_nodes, NO_VAL);
	j.num[GPUMEM_MAX_NODES] = gpumem_num(desc->max_nodes, NO_VAL);
	j.num[GPUMEM_NTASKS_PER_NODE] = gpumem_num(desc->ntasks_per_node, NO_VAL16);
	j.num[GPUMEM_HET_JOB] = desc->het_job_offset != NO_VAL;
	j.pin = pin && pins;
	// A script that may give --gres twice goes to Go whatever its fields say: the last
	// --gres, all the fields show, may have dropped a gpu:mem.
	if (gpumem_gres_twice(desc->script))
		j.in[GPUMEM_SCRIPT] = desc->script;
	if (!gpumem_has_mem(j.in[GPUMEM_PER_NODE]) && !gpumem_has_mem(j.in[GPUMEM_PER_JOB]) &&
	    !gpumem_has_mem(j.in[GPUMEM_PER_SOCKET]) && !gpumem_has_mem(j.in[GPUMEM_PER_TASK]) &&
	    !(j.pin && gpumem_has_shard(j.in[GPUMEM_PER_NODE])) && !j.in[GPUMEM_SCRIPT])
		return SLURM_SUCCESS;
	if (j.pin || j.in[GPUMEM_SCRIPT]) // pins depend on what runs now: never a memo
		gpumemDecide(&j);
	else if (!gpumem_cache_get(&cache, &j, GPUMEM_SUBMIT_NSLOTS)) {
		gpumemDecide(&j);
		gpumem_cache_put(&cache, &j, GPUMEM_SUBMIT_NSLOTS);
	}
	if (j.refusal) {
		gpumem_err_msg(err_msg, j.refusal);
		rc = ESLURM_INVALID_GRES;
	} else {
		for (int i = 0; i < GPUMEM_WRITABLE; i++)
			if (j.changed[i])
				gpumem_replace(fields[i], j.out[i]);
	}
	gpumem_job_release(&j);
	return rc;
}

int job_submit(job_desc_msg_t *desc, uint32_t submit_uid, char **err_msg)
{
	return gpumem_desc(desc, err_msg, 1);
}

// job_record_t is slurmctld's own structure: gpumem never reads it, so it is opaque here.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
int job_modify(job_desc_msg_t *desc, void *job_ptr, uint32_t submit_uid, char **err_msg)
{
	return gpumem_desc(desc, err_msg, 0);
}
#else
int job_modify(job_desc_msg_t *desc, void *job_ptr, uint32_t submit_uid)
{
	return gpumem_desc(desc, NULL, 0);
}
#endif
*/
import "C"

func main() {}
