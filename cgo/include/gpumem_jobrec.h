/* Reading the job a job_modify call changes. slurmctld hands job_modify its job_record_t,
 * whose layout is private to slurmctld (slurmctld.h ships in no -dev package), while the
 * job_desc of an update holds only the fields being changed: to check the change against
 * the job's GRES and shape, the shim reads a few fields of the record at offsets measured
 * for exactly the releases below (cgo/jobrec-offsets.sh prints the entries from checkouts
 * of those releases' tags). A plugin is loaded only by the release it was built for, and
 * before reading anything the shim checks the record's and its details' magic numbers and
 * the job id: any other release, or a record that does not look right, reads as unknown,
 * and a new gpu:mem is then refused with what to do instead. A release not listed here
 * is read when the plugin is built with its source tree (SLURM_SOURCE, cgo/build.sh).
 *
 * Where the magic numbers sit is measured too: from 25.11 job_record_t starts with the
 * job's slurm_step_id_t, and its magic comes second.
 *
 * Only the entries of 22.05.8, 24.11.5 and 26.05.5 were checked against a running
 * slurmctld (the lab); those of 23.11, 24.05, the other 24.11 micros, 25.05, 25.11 and
 * 26.05.0 to 26.05.3 are measured from SchedMD's tags (x86_64, gcc) and nothing more.
 * 24.11's record changed between micros (24.11.0, 24.11.1 to .3, 24.11.4 on): a release
 * shares an entry only with micros measured to be the same.
 *
 * 26.05.5 (Debian forky's) is the one entry not measured from source: neither its tag
 * nor Debian's source package was reachable, and its record is not 26.05.3's (one 8-byte
 * field more, after bit_flags). It was measured in the lab against Debian's 26.05.5
 * slurmctld: held jobs with a known value in each field read here (partition, --gres,
 * --gpus, --gpus-per-socket, --gpus-per-task, -w, -x, -C, -N), a job_modify that dumped
 * the record, and every field found at the offset below; TestScontrolUpdateKnowsTheJob
 * (test/e2e/route_test.go) checks the result. Measure a release from its tag whenever
 * the source can be had. */
#ifndef GPUMEM_JOBREC_H
#define GPUMEM_JOBREC_H

#include <stdint.h>
#include <slurm/slurm.h>
#include "gpumem_job.h"

#define GPUMEM_JOB_MAGIC 0xf0b7392c     /* slurmctld's JOB_MAGIC, at GPUMEM_JR_MAGIC in the record */
#define GPUMEM_DETAILS_MAGIC 0x0dea84e7 /* DETAILS_MAGIC, at GPUMEM_JR_DT_MAGIC in its details */

#if defined(GPUMEM_JOBREC_LOCAL)
/* cgo/build.sh with SLURM_SOURCE: measured from the source tree of the very release the
 * plugin is built for, at build time (cgo/jobrec-offsets.sh --one). */
#include "gpumem_jobrec_local.h"
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(22, 5, 8)
#define GPUMEM_JR_MAGIC 0
#define GPUMEM_JR_JOB_ID 360
#define GPUMEM_JR_DETAILS 208
#define GPUMEM_JR_PARTITION 584
#define GPUMEM_JR_TRES_PER_NODE 920
#define GPUMEM_JR_TRES_PER_JOB 912
#define GPUMEM_JR_TRES_PER_SOCKET 928
#define GPUMEM_JR_TRES_PER_TASK 936
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 376
#define GPUMEM_JR_DT_EXC_NODES 168
#define GPUMEM_JR_DT_MIN_NODES 276
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 0) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 1) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 2) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 3) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 4) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 5) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 6) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 7) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 8) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 9) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 10) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(23, 11, 11)
#define GPUMEM_JR_MAGIC 0
#define GPUMEM_JR_JOB_ID 392
#define GPUMEM_JR_DETAILS 216
#define GPUMEM_JR_PARTITION 640
#define GPUMEM_JR_TRES_PER_NODE 992
#define GPUMEM_JR_TRES_PER_JOB 984
#define GPUMEM_JR_TRES_PER_SOCKET 1000
#define GPUMEM_JR_TRES_PER_TASK 1008
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 384
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 284
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 0) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 1) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 2) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 3) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 4) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 5) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 6) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 7) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 5, 8)
#define GPUMEM_JR_MAGIC 0
#define GPUMEM_JR_JOB_ID 392
#define GPUMEM_JR_DETAILS 216
#define GPUMEM_JR_PARTITION 640
#define GPUMEM_JR_TRES_PER_NODE 1008
#define GPUMEM_JR_TRES_PER_JOB 1000
#define GPUMEM_JR_TRES_PER_SOCKET 1016
#define GPUMEM_JR_TRES_PER_TASK 1024
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 384
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 284
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 11, 0)
#define GPUMEM_JR_MAGIC 0
#define GPUMEM_JR_JOB_ID 392
#define GPUMEM_JR_DETAILS 216
#define GPUMEM_JR_PARTITION 640
#define GPUMEM_JR_TRES_PER_NODE 1016
#define GPUMEM_JR_TRES_PER_JOB 1008
#define GPUMEM_JR_TRES_PER_SOCKET 1024
#define GPUMEM_JR_TRES_PER_TASK 1032
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 400
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 284
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 11, 1) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 11, 2) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 11, 3)
#define GPUMEM_JR_MAGIC 0
#define GPUMEM_JR_JOB_ID 392
#define GPUMEM_JR_DETAILS 216
#define GPUMEM_JR_PARTITION 648
#define GPUMEM_JR_TRES_PER_NODE 1024
#define GPUMEM_JR_TRES_PER_JOB 1016
#define GPUMEM_JR_TRES_PER_SOCKET 1032
#define GPUMEM_JR_TRES_PER_TASK 1040
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 400
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 284
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 11, 4) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 11, 5) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 11, 6) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(24, 11, 7)
#define GPUMEM_JR_MAGIC 0
#define GPUMEM_JR_JOB_ID 392
#define GPUMEM_JR_DETAILS 216
#define GPUMEM_JR_PARTITION 656
#define GPUMEM_JR_TRES_PER_NODE 1032
#define GPUMEM_JR_TRES_PER_JOB 1024
#define GPUMEM_JR_TRES_PER_SOCKET 1040
#define GPUMEM_JR_TRES_PER_TASK 1048
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 400
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 284
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 0) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 1) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 2) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 3) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 4) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 5) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 6) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 7) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 5, 8)
#define GPUMEM_JR_MAGIC 0
#define GPUMEM_JR_JOB_ID 392
#define GPUMEM_JR_DETAILS 224
#define GPUMEM_JR_PARTITION 664
#define GPUMEM_JR_TRES_PER_NODE 1032
#define GPUMEM_JR_TRES_PER_JOB 1024
#define GPUMEM_JR_TRES_PER_SOCKET 1040
#define GPUMEM_JR_TRES_PER_TASK 1048
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 400
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 284
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 11, 0) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 11, 1) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 11, 2) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 11, 3) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 11, 4) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 11, 5) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 11, 6) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(25, 11, 7)
#define GPUMEM_JR_MAGIC 24
#define GPUMEM_JR_JOB_ID 424
#define GPUMEM_JR_DETAILS 248
#define GPUMEM_JR_PARTITION 704
#define GPUMEM_JR_TRES_PER_NODE 1080
#define GPUMEM_JR_TRES_PER_JOB 1072
#define GPUMEM_JR_TRES_PER_SOCKET 1088
#define GPUMEM_JR_TRES_PER_TASK 1096
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 400
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 284
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(26, 5, 0) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(26, 5, 1) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(26, 5, 2) || \
	SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(26, 5, 3)
#define GPUMEM_JR_MAGIC 24
#define GPUMEM_JR_JOB_ID 448
#define GPUMEM_JR_DETAILS 256
#define GPUMEM_JR_PARTITION 752
#define GPUMEM_JR_TRES_PER_NODE 1160
#define GPUMEM_JR_TRES_PER_JOB 1152
#define GPUMEM_JR_TRES_PER_SOCKET 1168
#define GPUMEM_JR_TRES_PER_TASK 1176
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 416
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 288
#elif SLURM_VERSION_NUMBER == SLURM_VERSION_NUM(26, 5, 5)
/* Measured in the lab, not from source (see above): every field after bit_flags 8 bytes
 * later than in 26.05.3; job_details_t as in 26.05.3. */
#define GPUMEM_JR_MAGIC 24
#define GPUMEM_JR_JOB_ID 456
#define GPUMEM_JR_DETAILS 264
#define GPUMEM_JR_PARTITION 760
#define GPUMEM_JR_TRES_PER_NODE 1168
#define GPUMEM_JR_TRES_PER_JOB 1160
#define GPUMEM_JR_TRES_PER_SOCKET 1176
#define GPUMEM_JR_TRES_PER_TASK 1184
#define GPUMEM_JR_DT_MAGIC 0
#define GPUMEM_JR_DT_FEATURES 208
#define GPUMEM_JR_DT_REQ_NODES 416
#define GPUMEM_JR_DT_EXC_NODES 176
#define GPUMEM_JR_DT_MIN_NODES 288
#endif

#ifdef GPUMEM_JR_JOB_ID
#define GPUMEM_JOBREC_LAYOUT 1
#define GPUMEM_JR_AT(p, off, type) (*(type *)((const char *)(p) + (off)))

/* gpumem_jobrec_read fills the GPUMEM_JOB_* slots and numbers of j from the record rec
 * (borrowed, as every in[]) and returns 1; 0, touching nothing, when the record does not
 * look like one of this release's. job_id is the job the update names (0: none, or not a
 * plain job id): the record must hold it, so only an update of one plain job is read. */
static inline int gpumem_jobrec_read(struct gpumem_job *j, const void *rec, uint32_t job_id)
{
	const void *details;

	if (!rec || !job_id || GPUMEM_JR_AT(rec, GPUMEM_JR_MAGIC, uint32_t) != GPUMEM_JOB_MAGIC ||
	    GPUMEM_JR_AT(rec, GPUMEM_JR_JOB_ID, uint32_t) != job_id)
		return 0;
	details = GPUMEM_JR_AT(rec, GPUMEM_JR_DETAILS, const void *);
	if (!details || GPUMEM_JR_AT(details, GPUMEM_JR_DT_MAGIC, uint32_t) != GPUMEM_DETAILS_MAGIC)
		return 0;
	j->in[GPUMEM_JOB_PER_NODE] = GPUMEM_JR_AT(rec, GPUMEM_JR_TRES_PER_NODE, const char *);
	j->in[GPUMEM_JOB_PER_JOB] = GPUMEM_JR_AT(rec, GPUMEM_JR_TRES_PER_JOB, const char *);
	j->in[GPUMEM_JOB_PER_SOCKET] = GPUMEM_JR_AT(rec, GPUMEM_JR_TRES_PER_SOCKET, const char *);
	j->in[GPUMEM_JOB_PER_TASK] = GPUMEM_JR_AT(rec, GPUMEM_JR_TRES_PER_TASK, const char *);
	j->in[GPUMEM_JOB_PARTITION] = GPUMEM_JR_AT(rec, GPUMEM_JR_PARTITION, const char *);
	j->in[GPUMEM_JOB_FEATURES] = GPUMEM_JR_AT(details, GPUMEM_JR_DT_FEATURES, const char *);
	j->in[GPUMEM_JOB_REQ_NODES] = GPUMEM_JR_AT(details, GPUMEM_JR_DT_REQ_NODES, const char *);
	j->in[GPUMEM_JOB_EXC_NODES] = GPUMEM_JR_AT(details, GPUMEM_JR_DT_EXC_NODES, const char *);
	j->num[GPUMEM_JOB_MIN_NODES] = GPUMEM_JR_AT(details, GPUMEM_JR_DT_MIN_NODES, uint32_t);
	j->num[GPUMEM_JOB_KNOWN] = 1;
	return 1;
}
#else
/* No layout: job_modify sees only the change, and Go refuses a new gpu:mem it cannot
 * check against the job (internal/plugin/modify.go). */
#define GPUMEM_JOBREC_LAYOUT 0
static inline int gpumem_jobrec_read(struct gpumem_job *j, const void *rec, uint32_t job_id)
{
	return 0;
}
#endif

#endif
