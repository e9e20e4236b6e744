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
#include "gpumem_gates.h"
#include "gpumem_cache.h"
#include "gpumem_jobrec.h"

const char plugin_name[] = "gpumem: GPU memory requests to native GRES";
const char plugin_type[] = "job_submit/gpumem";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

extern int gpumemInit(int have_allocator);
extern int gpumemPins(void);
extern void gpumemFini(void);
extern int gpumemDecide(void *job);
extern int gpumemModify(void *job);

static struct gpumem_cache cache = {.mu = PTHREAD_MUTEX_INITIALIZER};
static int pins; // gpumem.conf ShardTypes = per-gpu: new shard jobs go to Go, uncached

int init(void)
{
	gpumem_cache_reset(&cache);
	int rc = gpumemInit(gpumem_alloc_init() == 0);
	pins = gpumemPins();
	return rc;
}

// Slurm calls fini through a void (*)(void) in every release (plugin_unload in
// src/common/plugin.c); its own plugins say so from 25.11.
void fini(void)
{
	gpumemFini();
	gpumem_cache_reset(&cache);
}

// gpumem_num is a job_desc number for Go: 0 where Slurm holds its "unset" value.
static uint32_t gpumem_num(uint32_t v, uint32_t unset)
{
	return v == unset ? 0 : v;
}

// gpumem_fields points j at the job_desc fields Go reads; fields are the writable ones.
static void gpumem_fields(struct gpumem_job *j, job_desc_msg_t *desc, char **fields[GPUMEM_WRITABLE])
{
	for (int i = 0; i < GPUMEM_WRITABLE; i++)
		j->in[i] = *fields[i];
	j->in[GPUMEM_EXC_NODES] = desc->exc_nodes;
	j->in[GPUMEM_FEATURES] = desc->features;
	j->in[GPUMEM_RESERVATION] = desc->reservation;
	j->in[GPUMEM_ARRAY_INX] = desc->array_inx;
	j->in[GPUMEM_MEM_PER_TRES] = desc->mem_per_tres;
	j->in[GPUMEM_CPUS_PER_TRES] = desc->cpus_per_tres;
	j->in[GPUMEM_TRES_FREQ] = desc->tres_freq;
	j->num[GPUMEM_NUM_TASKS] = gpumem_num(desc->num_tasks, NO_VAL);
	j->num[GPUMEM_NTASKS_PER_TRES] = gpumem_num(desc->ntasks_per_tres, NO_VAL16);
	j->num[GPUMEM_EXCLUSIVE] = desc->shared != NO_VAL16 && desc->shared != JOB_SHARED_OK;
	j->num[GPUMEM_MIN_NODES] = gpumem_num(desc->min_nodes, NO_VAL);
	j->num[GPUMEM_MAX_NODES] = gpumem_num(desc->max_nodes, NO_VAL);
	j->num[GPUMEM_NTASKS_PER_NODE] = gpumem_num(desc->ntasks_per_node, NO_VAL16);
	j->num[GPUMEM_HET_JOB] = desc->het_job_offset == NO_VAL ? 0 : desc->het_job_offset + 1;
}

// gpumem_has_gpu: a GRES string that may hold gpu or shard entries, which a change of
// the job's shape is checked against.
static int gpumem_has_gpu(const char *s)
{
	return s && (strstr(s, "gpu") || strstr(s, "shard"));
}

// gpumem_asks_mem is the prefilter: whether any GRES field holds "mem".
static int gpumem_asks_mem(const struct gpumem_job *j)
{
	return gpumem_has_mem(j->in[GPUMEM_PER_NODE]) || gpumem_has_mem(j->in[GPUMEM_PER_JOB]) ||
	       gpumem_has_mem(j->in[GPUMEM_PER_SOCKET]) || gpumem_has_mem(j->in[GPUMEM_PER_TASK]);
}

// gpumem_answer hands Go's answer to Slurm: the refusal, or the rewritten fields.
static int gpumem_answer(struct gpumem_job *j, char **fields[GPUMEM_WRITABLE], char **err_msg, int refused_rc)
{
	int rc = SLURM_SUCCESS;

	if (j->refusal) {
		gpumem_err_msg(err_msg, j->refusal);
		rc = refused_rc;
	} else {
		for (int i = 0; i < GPUMEM_WRITABLE; i++)
			if (j->changed[i])
				gpumem_replace(fields[i], j->out[i]);
	}
	gpumem_job_release(j);
	return rc;
}

// gpumem_desc decides a new job. Go decides whether and where a job is pinned; the shim
// only copies the job's fields to it.
static int gpumem_desc(job_desc_msg_t *desc, char **err_msg)
{
	char **fields[GPUMEM_WRITABLE] = {
		&desc->tres_per_node, &desc->tres_per_job,
		&desc->tres_per_socket, &desc->tres_per_task, &desc->partition, &desc->req_nodes,
	};
	struct gpumem_job j;

	if (gpumem_alloc_init() != 0)
		return SLURM_SUCCESS; // said at init; leaving the job alone is all that is safe
	memset(&j, 0, sizeof(j));
	gpumem_fields(&j, desc, fields);
	j.pin = pins;
	// A script that may give --gres twice goes to Go whatever its fields say: the last
	// --gres, all the fields show, may have dropped a gpu:mem.
	if (gpumem_script_to_go(desc->script, gpumem_asks_mem(&j)))
		j.in[GPUMEM_SCRIPT] = desc->script;
	// Every hetjob component goes to Go, which follows a hetjob's components in order
	// (those without gpu:mem too: the first one starts a new job), and is never a memo:
	// a component's answer depends on the ones before it.
	int het = j.num[GPUMEM_HET_JOB] != 0;
	if (!gpumem_asks_mem(&j) && !(j.pin && gpumem_has_shard(j.in[GPUMEM_PER_NODE])) && !j.in[GPUMEM_SCRIPT] && !het)
		return SLURM_SUCCESS;
	if (j.pin || j.in[GPUMEM_SCRIPT] || het) // pins depend on what runs now: never a memo
		gpumemDecide(&j);
	else if (!gpumem_cache_get(&cache, &j, GPUMEM_SUBMIT_NSLOTS)) {
		gpumemDecide(&j);
		gpumem_cache_put(&cache, &j, GPUMEM_SUBMIT_NSLOTS);
	}
	return gpumem_answer(&j, fields, err_msg, ESLURM_INVALID_GRES);
}

int job_submit(job_desc_msg_t *desc, uint32_t submit_uid, char **err_msg)
{
	return gpumem_desc(desc, err_msg);
}

// gpumem_update_id is the one plain job an update names (scontrol sends it as a
// string), or 0: an array, a heterogeneous job or several jobs are read as unknown.
static uint32_t gpumem_update_id(const job_desc_msg_t *desc)
{
	const char *s = desc->job_id_str;
	uint32_t id = 0;

#if GPUMEM_JOBDESC_STEP_ID
	// From 25.11 a job_desc names its job by a slurm_step_id_t (step_id), no job_id.
	uint32_t job_id = desc->step_id.job_id;
#else
	uint32_t job_id = desc->job_id;
#endif
	if (job_id && job_id != NO_VAL)
		return job_id;
	if (!s || !*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || id > (UINT32_MAX - 9) / 10)
			return 0;
		id = id * 10 + (uint32_t)(*s - '0');
	}
	return id;
}

// gpumem_modify decides a change to a job (never pinned, so that gpumemctl steer can
// take a pin back). Where this release's job record can be read, Go sees the job as it
// is too: a new gpu:mem is decided for the job's own partitions and shape, and a change of
// partition, features or nodes is checked against the GRES the job already holds. Updates
// are rare: no memo.
static int gpumem_modify(job_desc_msg_t *desc, const void *job_ptr, char **err_msg)
{
	char **fields[GPUMEM_WRITABLE] = {
		&desc->tres_per_node, &desc->tres_per_job,
		&desc->tres_per_socket, &desc->tres_per_task, &desc->partition, &desc->req_nodes,
	};
	struct gpumem_job j;
	int gres, shape;

	if (gpumem_alloc_init() != 0)
		return SLURM_SUCCESS;
	memset(&j, 0, sizeof(j));
	gpumem_fields(&j, desc, fields);
	gres = j.in[GPUMEM_PER_NODE] || j.in[GPUMEM_PER_JOB] || j.in[GPUMEM_PER_SOCKET] || j.in[GPUMEM_PER_TASK];
	shape = desc->partition || desc->features || desc->req_nodes || desc->exc_nodes || j.num[GPUMEM_MIN_NODES];
	j.num[GPUMEM_JOB_NAMED] = gpumem_update_id(desc) != 0;
	j.num[GPUMEM_JOB_LAYOUT] = GPUMEM_JOBREC_LAYOUT;
	gpumem_jobrec_read(&j, job_ptr, gpumem_update_id(desc));
#if !GPUMEM_UPDATE_SWAPS_GRES
	j.num[GPUMEM_KEEP_GRES] = 1; // seen on 22.05: "Invalid generic resource" for shard <-> gpu
#endif
	if (!gpumem_asks_mem(&j) && !(shape && !gres && j.num[GPUMEM_JOB_KNOWN] &&
				      (gpumem_has_gpu(j.in[GPUMEM_JOB_PER_NODE]) || gpumem_has_gpu(j.in[GPUMEM_JOB_PER_JOB]))))
		return SLURM_SUCCESS;
	gpumemModify(&j);
	// Without err_msg (22.05) the user reads only this code's text: name what is wrong.
	return gpumem_answer(&j, fields, err_msg, gres ? ESLURM_INVALID_GRES : ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE);
}

#if GPUMEM_JOBMODIFY_ERRMSG
int job_modify(job_desc_msg_t *desc, void *job_ptr, uint32_t submit_uid, char **err_msg)
{
	return gpumem_modify(desc, job_ptr, err_msg);
}
#else
int job_modify(job_desc_msg_t *desc, void *job_ptr, uint32_t submit_uid)
{
	return gpumem_modify(desc, job_ptr, NULL);
}
#endif
*/
import "C"

func main() {}
