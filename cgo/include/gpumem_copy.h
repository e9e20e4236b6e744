/* Writing Go's answer back into Slurm's strings. Slurm frees what a plugin leaves in its
 * structures with its own allocator, so replacements are made with slurm_xstrdup and old
 * values released with slurm_xfree, both found in the running program with dlsym. */
#ifndef GPUMEM_COPY_H
#define GPUMEM_COPY_H

#include <dlfcn.h>
#include <stdlib.h>
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

/* Release what Go allocated with malloc. */
static inline void gpumem_job_release(struct gpumem_job *j)
{
	for (int i = 0; i < GPUMEM_SLOTS; i++)
		free(j->out[i]);
	free(j->refusal);
}

#endif
