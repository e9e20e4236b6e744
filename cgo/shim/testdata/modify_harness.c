/* A stand-in for slurmctld's scontrol update path around job_submit_gpumem.so: one
 * job_modify call per line of stdin, each with a job record laid out as
 * gpumem_jobrec.h says this release lays it out (so the harness must be compiled with
 * the same slurm.h and defines as the plugin).
 *
 *   modify_harness PLUGIN.so < lines
 *
 * A line is "ID GRES", the update (GRES is its tres_per_node, "-" for none; ID is the
 * job id string scontrol sends), optionally followed by " partition=P" (the update's
 * partition), " rec=TRES@PART" (the record of job ID as slurmctld holds it: its
 * tres_per_node and partition; without it job_modify gets no record) and " badmagic"
 * (a record whose magic number is wrong). For each it prints
 * "rc=RC tres_per_node=VALUE partition=VALUE err=MESSAGE". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include "gpumem_jobrec.h"

char *slurm_xstrdup(const char *s) { return s ? strdup(s) : NULL; }

void slurm_xfree(void **p)
{
	free(*p);
	*p = NULL;
}

#include "harness.h"
#include "gpumem_gates.h"

#if GPUMEM_JOBMODIFY_ERRMSG
typedef int (*modify_fn)(job_desc_msg_t *, void *, uint32_t, char **);
#define MODIFY(f, d, rec, err) (f)((d), (rec), 0, (err))
#else
typedef int (*modify_fn)(job_desc_msg_t *, void *, uint32_t);
#define MODIFY(f, d, rec, err) ((void)(err), (f)((d), (rec), 0))
#endif

#ifdef GPUMEM_JR_JOB_ID
#define PUT(p, off, type, v) (*(type *)((char *)(p) + (off)) = (v))

/* record fills rec and details (zeroed, 4096 bytes each) as slurmctld's job id's record. */
static void record(char *rec, char *details, uint32_t id, char *tres, char *part, int bad)
{
	PUT(rec, GPUMEM_JR_MAGIC, uint32_t, bad ? 0xdeadbeef : GPUMEM_JOB_MAGIC);
	PUT(rec, GPUMEM_JR_JOB_ID, uint32_t, id);
	PUT(rec, GPUMEM_JR_DETAILS, void *, details);
	PUT(rec, GPUMEM_JR_TRES_PER_NODE, char *, tres);
	PUT(rec, GPUMEM_JR_PARTITION, char *, part);
	PUT(details, GPUMEM_JR_DT_MAGIC, uint32_t, GPUMEM_DETAILS_MAGIC);
	PUT(details, GPUMEM_JR_DT_MIN_NODES, uint32_t, 1);
}
#else
static void record(char *rec, char *details, uint32_t id, char *tres, char *part, int bad)
{
	(void)details, (void)tres, (void)part, (void)bad;
	memset(rec, 0x5a, 4096); /* this build reads no record: it must never look */
	(void)id;
}
#endif

int main(int argc, char **argv)
{
	void *so = load_plugin(argc, argv);
	void (*fini)(void) = (void (*)(void))dlsym(so, "fini");
	modify_fn modify = (modify_fn)dlsym(so, "job_modify");
	if (!fini || !modify) {
		fprintf(stderr, "plugin lacks fini/job_modify\n");
		return 1;
	}
	static char rec[4096], details[4096];
	char line[4096];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		job_desc_msg_t d;
		memset(&d, 0, sizeof(d));
		d.min_nodes = d.max_nodes = d.het_job_offset = NO_VAL; /* as slurm_init_job_desc_msg */
#if GPUMEM_JOBDESC_STEP_ID
		d.step_id.job_id = NO_VAL;
#else
		d.job_id = NO_VAL;
#endif
		d.ntasks_per_node = d.ntasks_per_tres = d.shared = NO_VAL16;
		d.num_tasks = NO_VAL;
		char *err = NULL, *id = line, *gres = strchr(line, ' ');
		if (!gres)
			continue;
		*gres++ = 0;
		char *opt = strchr(gres, ' ');
		if (opt)
			*opt++ = 0;
		int has_rec = 0, bad = 0;
		char *rtres = NULL, *rpart = NULL;
		while (opt && *opt) {
			char *next = strchr(opt, ' ');
			if (next)
				*next++ = 0;
			if (strncmp(opt, "partition=", 10) == 0) {
				d.partition = strdup(opt + 10);
			} else if (strncmp(opt, "rec=", 4) == 0) {
				has_rec = 1;
				rtres = opt + 4;
				rpart = strchr(rtres, '@');
				if (rpart)
					*rpart++ = 0;
			} else if (strcmp(opt, "badmagic") == 0) {
				bad = 1;
			}
			opt = next;
		}
		d.job_id_str = id;
		d.tres_per_node = strcmp(gres, "-") == 0 ? NULL : strdup(gres);
		memset(rec, 0, sizeof(rec));
		memset(details, 0, sizeof(details));
		if (has_rec)
			record(rec, details, (uint32_t)strtoul(id, NULL, 10), rtres, rpart, bad);
		int rc = MODIFY(modify, &d, has_rec ? rec : NULL, &err);
		for (char *c = err; c && *c; c++)
			if (*c == '\n')
				*c = '|';
		printf("rc=%d tres_per_node=%s partition=%s err=%s\n", rc, d.tres_per_node ? d.tres_per_node : "(null)",
		       d.partition ? d.partition : "(null)", err ? err : "");
		fflush(stdout);
		free(d.tres_per_node);
		free(d.partition);
		free(err);
	}
	fini();
	return 0;
}
