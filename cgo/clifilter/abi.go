// Command clifilter is cli_filter/gpumem, the plugin srun, sbatch and salloc load from
// cli_filter_gpumem.so. It rewrites --gres=gpu:mem:SIZE in the client, before the job and
// its first step are built, so srun sends slurmctld and its own step the same native
// GRES; and it turns a step's gpu:mem (srun inside an allocation, which never passes
// through job_submit) into a share of what the job holds. Build it with cgo/build.sh.
package main

// The ABI symbols live here, in a file without //export (see cgo/jobsubmit/abi.go).

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../include
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include "gpumem_copy.h"
#include "gpumem_gates.h"

const char plugin_name[] = "gpumem: GPU memory requests to native GRES in the client";
const char plugin_type[] = "cli_filter/gpumem";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

extern int gpumemCliInit(int usable);
extern int gpumemCliDecide(void *job);
extern void gpumemCliError(char *msg);

// slurm_opt_t is the client's own structure; it is only handed back to its accessors.
typedef char *(*opt_get_fn)(void *opt, const char *name);
typedef int (*opt_set_fn)(void *opt, const char *name, const char *value, bool early);
typedef bool (*opt_reset_fn)(void *opt, const char *name);
typedef bool (*opt_isset_fn)(void *opt, const char *name);
// slurm_load_job names the job by a slurm_step_id_t from 26.05, by a bare job id before
// (25.11 has step ids in job_desc, and slurm_load_job_sluid, but not this).
#if GPUMEM_LOAD_JOB_STEP_ID
typedef int (*load_job_fn)(job_info_msg_t **resp, slurm_step_id_t step_id, uint16_t show_flags);
static slurm_step_id_t gpumem_job_ref(uint32_t job_id)
{
	slurm_step_id_t id = SLURM_STEP_ID_INITIALIZER;
	id.job_id = job_id;
	return id;
}
#else
typedef int (*load_job_fn)(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags);
static uint32_t gpumem_job_ref(uint32_t job_id)
{
	return job_id;
}
#endif
typedef void (*free_job_fn)(job_info_msg_t *msg);
typedef char *(*strerror_fn)(int errnum);

static opt_get_fn opt_get;
static opt_set_fn opt_set;
static opt_reset_fn opt_reset;
static opt_isset_fn opt_isset;
static load_job_fn load_job;
static free_job_fn free_job;
static strerror_fn slurm_err;

static const char *opt_names[GPUMEM_OPT_NOPTS] = {
	"gres", "gpus", "gpus-per-node", "gpus-per-socket", "gpus-per-task", "partition",
	"nodes", "nodelist", "exclude", "constraint", "array", "reservation", "ntasks-per-node",
	"ntasks", "exclusive", "mem-per-gpu", "cpus-per-gpu", "ntasks-per-gpu", "gpu-freq", "tres-per-task",
};

int init(void)
{
	opt_get = (opt_get_fn)dlsym(RTLD_DEFAULT, "slurm_option_get");
	opt_set = (opt_set_fn)dlsym(RTLD_DEFAULT, "slurm_option_set");
	opt_reset = (opt_reset_fn)dlsym(RTLD_DEFAULT, "slurm_option_reset");
	opt_isset = (opt_isset_fn)dlsym(RTLD_DEFAULT, "slurm_option_isset");
	load_job = (load_job_fn)dlsym(RTLD_DEFAULT, "slurm_load_job");
	free_job = (free_job_fn)dlsym(RTLD_DEFAULT, "slurm_free_job_info_msg");
	slurm_err = (strerror_fn)dlsym(RTLD_DEFAULT, "slurm_strerror");
	return gpumemCliInit(opt_get && opt_set && opt_reset && opt_isset && load_job && free_job &&
			     gpumem_alloc_init() == 0);
}

// void in every release: see cgo/jobsubmit/abi.go.
void fini(void)
{
}

int cli_filter_p_setup_defaults(void *opt, bool early)
{
	return SLURM_SUCCESS;
}

// step_job is the job an srun runs a step in: its --jobid, else the allocation it was
// started in. sbatch and salloc inside an allocation make new jobs, so they have none.
static uint32_t step_job(void *opt)
{
	const char *env;
	char *id;
	uint32_t job_id = 0;

	if (strcmp(program_invocation_short_name, "srun"))
		return 0;
	if ((id = opt_get(opt, "jobid"))) {
		job_id = strtoul(id, NULL, 10);
		gpumem_xfree((void **)&id);
	}
	if (!job_id && (env = getenv("SLURM_JOB_ID")))
		job_id = strtoul(env, NULL, 10);
	return job_id;
}

int cli_filter_p_pre_submit(void *opt, int offset)
{
	struct gpumem_job j;
	char *vals[GPUMEM_OPT_NOPTS];
	job_info_msg_t *jobs = NULL;
	int rc = SLURM_SUCCESS;

	if (!opt_get)
		return SLURM_SUCCESS;
	memset(&j, 0, sizeof(j));
	// Which component of a heterogeneous job this is (0 also for any other job): its
	// components each take nodes of their own, so Go keeps the earlier ones in mind.
	j.num[GPUMEM_HET_JOB] = offset > 0 ? offset : 0;
	// The shape options print a value even when unset ("nodes" prints "1-0"): only those
	// the user gave are read.
	for (int i = 0; i < GPUMEM_OPT_NOPTS; i++)
		j.in[i] = vals[i] = (i < GPUMEM_OPT_NODES || opt_isset(opt, opt_names[i])) ?
			opt_get(opt, opt_names[i]) : NULL;
	// Only a step that asks for gpu:mem needs its job; gpumemCliDecide sees the rest.
	j.job_id = step_job(opt);
	if (j.job_id && gpumem_has_mem(vals[GPUMEM_OPT_GRES])) {
		if (load_job(&jobs, gpumem_job_ref(j.job_id), SHOW_ALL) || !jobs || jobs->record_count < 1) {
			char msg[200], num[24];
			const char *why = slurm_err ? slurm_err(errno) : NULL;
			if (!why) {
				snprintf(num, sizeof(num), "error %d", errno);
				why = num;
			}
			snprintf(msg, sizeof(msg), "cli_filter/gpumem: cannot read job %u: %s; the step's --gres is left as typed",
				 j.job_id, why);
			gpumemCliError(msg);
			j.job_id = 0;
			goto out;
		}
		j.in[GPUMEM_STEP_JOB_PER_NODE] = jobs->job_array[0].tres_per_node;
		j.in[GPUMEM_STEP_JOB_PER_JOB] = jobs->job_array[0].tres_per_job;
	}
	if (gpumemCliDecide(&j)) {
		gpumemCliError(j.refusal);
		rc = SLURM_ERROR;
		goto out;
	}
	for (int i = 0; i < GPUMEM_OPT_NOPTS; i++) {
		if (!j.changed[i])
			continue;
		if (j.out[i] ? opt_set(opt, opt_names[i], j.out[i], false) : !opt_reset(opt, opt_names[i])) {
			char msg[200];
			snprintf(msg, sizeof(msg), "cli_filter/gpumem: cannot set option %s", opt_names[i]);
			gpumemCliError(msg);
			rc = SLURM_ERROR;
		}
	}
out:
	if (jobs)
		free_job(jobs);
	for (int i = 0; i < GPUMEM_OPT_NOPTS; i++)
		if (vals[i])
			gpumem_xfree((void **)&vals[i]);
	gpumem_job_release(&j);
	return rc;
}

void cli_filter_p_post_submit(int offset, uint32_t jobid, uint32_t stepid)
{
}
*/
import "C"

func main() {}
