/* A stand-in for slurmctld around job_submit_gpumem.so: it exports the Slurm functions the
 * plugin looks up at run time, loads the plugin, and submits one job per line of stdin.
 *
 *   submit_harness PLUGIN.so < lines
 *
 * A line is "TRES_PER_NODE" ("-" for none), optionally followed by " exc=NODES",
 * " features=F", " nodes=N", " het=OFFSET", " exclusive", " mem_per_tres=TRES" (the job's
 * excluded nodes, constraint, minimum node count, hetjob component, --exclusive,
 * --mem-per-gpu) or " prior=MSG" (an earlier plugin's message in err_msg),
 * or "sleep MS". For each job it prints
 * "rc=RC tres_per_node=VALUE same=0|1 err=MESSAGE", where same=1 says the plugin left
 * Slurm's very string in place (it never freed it), then " req_nodes=NODES" when the
 * plugin set the required nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>

static void *watched; /* the job's own tres_per_node */
static int watched_freed;

char *slurm_xstrdup(const char *s) { return s ? strdup(s) : NULL; }

void slurm_xfree(void **p)
{
	if (*p && *p == watched)
		watched_freed = 1;
	free(*p);
	*p = NULL;
}

#include "harness.h"

int main(int argc, char **argv)
{
	void *so = load_plugin(argc, argv);
	void (*fini)(void) = (void (*)(void))dlsym(so, "fini");
	int (*submit)(job_desc_msg_t *, uint32_t, char **) =
		(int (*)(job_desc_msg_t *, uint32_t, char **))dlsym(so, "job_submit");
	if (!fini || !submit) {
		fprintf(stderr, "plugin lacks fini/job_submit\n");
		return 1;
	}
	char line[4096];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		int ms;
		if (sscanf(line, "sleep %d", &ms) == 1) {
			struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
			continue;
		}
		job_desc_msg_t d;
		memset(&d, 0, sizeof(d));
		d.min_nodes = d.max_nodes = d.het_job_offset = NO_VAL; /* as slurm_init_job_desc_msg */
		d.ntasks_per_node = d.ntasks_per_tres = d.shared = NO_VAL16;
		d.num_tasks = NO_VAL;
		char *err = NULL;
		char *opt = strchr(line, ' ');
		if (opt)
			*opt++ = 0;
		while (opt && *opt) {
			char *next = strchr(opt, ' ');
			if (next)
				*next++ = 0;
			if (strncmp(opt, "exc=", 4) == 0)
				d.exc_nodes = opt + 4;
			else if (strncmp(opt, "features=", 9) == 0)
				d.features = opt + 9;
			else if (strncmp(opt, "nodes=", 6) == 0)
				d.min_nodes = (uint32_t)atoi(opt + 6);
			else if (strncmp(opt, "het=", 4) == 0)
				d.het_job_offset = (uint32_t)atoi(opt + 4);
			else if (strcmp(opt, "exclusive") == 0)
				d.shared = JOB_SHARED_NONE;
			else if (strncmp(opt, "mem_per_tres=", 13) == 0)
				d.mem_per_tres = opt + 13;
			else if (strncmp(opt, "prior=", 6) == 0)
				err = strdup(opt + 6);
			opt = next;
		}
		d.tres_per_node = strcmp(line, "-") == 0 ? NULL : strdup(line);
		watched = d.tres_per_node;
		watched_freed = 0;
		int rc = submit(&d, 0, &err);
		for (char *c = err; c && *c; c++)
			if (*c == '\n')
				*c = '|'; /* one job, one line */
		printf("rc=%d tres_per_node=%s same=%d err=%s", rc, d.tres_per_node ? d.tres_per_node : "(null)",
		       !watched_freed, err ? err : "");
		printf(d.req_nodes ? " req_nodes=%s\n" : "\n", d.req_nodes);
		fflush(stdout);
		free(d.tres_per_node);
		free(d.req_nodes);
		free(err);
	}
	fini();
	return 0;
}
