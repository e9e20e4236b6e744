/* Writing Go's answer back into Slurm's strings. Slurm frees what a plugin leaves in its
 * structures with its own allocator, so replacements are made with slurm_xstrdup and old
 * values released with slurm_xfree, both found in the running program with dlsym. */
#ifndef GPUMEM_COPY_H
#define GPUMEM_COPY_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "gpumem_job.h"

typedef char *(*gpumem_xstrdup_fn)(const char *);
typedef void (*gpumem_xfree_fn)(void **);

static gpumem_xstrdup_fn gpumem_xstrdup;
static gpumem_xfree_fn gpumem_xfree;

/* 0 when the program exports Slurm's allocator; without it nothing may be written. */
static inline int gpumem_alloc_init(void)
{
	if (!gpumem_xstrdup)
		gpumem_xstrdup = (gpumem_xstrdup_fn)dlsym(RTLD_DEFAULT, "slurm_xstrdup");
	if (!gpumem_xfree)
		gpumem_xfree = (gpumem_xfree_fn)dlsym(RTLD_DEFAULT, "slurm_xfree");
	return (gpumem_xstrdup && gpumem_xfree) ? 0 : -1;
}

/* Replace *field with val (NULL unsets it), in Slurm's allocator. */
static inline void gpumem_replace(char **field, const char *val)
{
	if (*field)
		gpumem_xfree((void **)field);
	*field = val ? gpumem_xstrdup(val) : NULL;
}

/* Give the user msg through *err_msg. A message an earlier plugin left there is kept,
 * with msg after it on its own line (as slurmctld joins its own messages): the user reads
 * both, and nothing is leaked. Without memory the earlier message stays as it was. */
static inline void gpumem_err_msg(char **err_msg, const char *msg)
{
	if (!err_msg || !msg)
		return;
	if (!*err_msg || !**err_msg) {
		char *m = gpumem_xstrdup(msg);
		if (m) {
			if (*err_msg)
				gpumem_xfree((void **)err_msg);
			*err_msg = m;
		}
		return;
	}
	size_t a = strlen(*err_msg), b = strlen(msg);
	char *both = malloc(a + 1 + b + 1);
	if (!both)
		return;
	memcpy(both, *err_msg, a);
	both[a] = '\n';
	memcpy(both + a + 1, msg, b + 1);
	char *m = gpumem_xstrdup(both);
	free(both);
	if (m) {
		gpumem_xfree((void **)err_msg);
		*err_msg = m;
	}
}

/* Release what Go allocated with malloc. */
static inline void gpumem_job_release(struct gpumem_job *j)
{
	for (int i = 0; i < GPUMEM_SLOTS; i++)
		free(j->out[i]);
	free(j->refusal);
}

#endif
