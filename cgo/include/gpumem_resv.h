/* Slurm's reservations for gpumem: a reservation's nodes are the capacity its jobs are
 * admitted against. Both plugins ask through the program's own libslurm (dlsym, as for
 * the other Slurm functions), never by starting a process: job_submit from a goroutine of
 * its own, never on the submit path; a client once, for its job. */
#ifndef GPUMEM_RESV_H
#define GPUMEM_RESV_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/slurm.h>

/* What one answer may hold, at the most: the rest is left out. */
#define GPUMEM_RESV_MAX_BYTES (1 << 20)

typedef int (*gpumem_load_resv_fn)(time_t update_time, reserve_info_msg_t **resp);
typedef void (*gpumem_free_resv_fn)(reserve_info_msg_t *msg);

/* gpumem_resv_list asks slurmctld for its reservations (one RPC) and returns, malloc'd,
 * "NAME\tNODES\n" for each that has nodes; NULL when the program has no such function
 * (*rc = -1) or the RPC failed (*rc = Slurm's errno). */
static inline char *gpumem_resv_list(int *rc)
{
	gpumem_load_resv_fn load = (gpumem_load_resv_fn)dlsym(RTLD_DEFAULT, "slurm_load_reservations");
	gpumem_free_resv_fn release = (gpumem_free_resv_fn)dlsym(RTLD_DEFAULT, "slurm_free_reservation_info_msg");
	int (*last)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "slurm_get_errno");
	reserve_info_msg_t *msg = NULL;
	size_t n = 0;
	char *out;

	*rc = -1;
	if (!load || !release)
		return NULL;
	if (load((time_t)0, &msg) != 0 || !msg) {
		*rc = last ? last() : -2;
		return NULL;
	}
	out = malloc(GPUMEM_RESV_MAX_BYTES);
	if (!out) {
		release(msg);
		return NULL;
	}
	out[0] = 0;
	for (uint32_t i = 0; i < msg->record_count; i++) {
		const reserve_info_t *r = &msg->reservation_array[i];
		int w;
		if (!r->name || !r->node_list || !r->node_list[0])
			continue;
		w = snprintf(out + n, GPUMEM_RESV_MAX_BYTES - n, "%s\t%s\n", r->name, r->node_list);
		if (w < 0 || (size_t)w >= GPUMEM_RESV_MAX_BYTES - n) {
			out[n] = 0; /* a record cut short is left out */
			break;
		}
		n += (size_t)w;
	}
	release(msg);
	*rc = 0;
	return out;
}

#endif
