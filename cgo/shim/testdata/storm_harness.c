/* slurmctld >= 23.02 in miniature around job_submit_gpumem.so: it loads the plugin and
 * calls job_submit from THREADS threads at once for SECONDS seconds, as RPC threads under
 * a read lock do, while the test that runs it rewrites the plugin's files.
 *
 *   storm_harness PLUGIN.so THREADS SECONDS
 *
 * Every job is checked as it comes back: a gpu:mem request accepted but left
 * untranslated (it could never run) prints "UNTRANSLATED ...". ("gpu:MEM:7g" is not
 * one: GRES names are case-sensitive, so it is a GPU type MEM, Slurm's to refuse.) At the end it prints
 * "jobs=N untranslated=N refused=N pinned=N". The plugin's log goes to stderr. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>

char *slurm_xstrdup(const char *s) { return s ? strdup(s) : NULL; }

void slurm_xfree(void **p)
{
	free(*p);
	*p = NULL;
}

#include "harness.h"

static int (*submit)(job_desc_msg_t *, uint32_t, char **);
static int seconds;
static long jobs, untranslated, refused, pinned;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static const char *requests[] = {
	"gres/gpu:mem:20g", "gres/gpu:mem:5g", "gres/shard:10", "gres/gpu:1", NULL,
	"gres/gpu:mem:40g", "gres/shard:3", "gres/gpu:mem:900g", "gres/gpu:MEM:7g",
};
#define NREQ (sizeof(requests) / sizeof(requests[0]))

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *storm(void *arg)
{
	long id = (long)arg, n = 0, un = 0, ref = 0, pin = 0;
	double end = now() + seconds;
	for (unsigned i = (unsigned)id; now() < end; i++, n++) {
		job_desc_msg_t d;
		memset(&d, 0, sizeof(d));
		d.min_nodes = d.max_nodes = d.het_job_offset = NO_VAL;
		d.ntasks_per_node = d.ntasks_per_tres = d.shared = NO_VAL16;
		d.num_tasks = NO_VAL;
		const char *req = requests[i % NREQ];
		d.tres_per_node = req ? strdup(req) : NULL;
		if (i % 5 == 1)
			d.exc_nodes = "n3";
		if (i % 7 == 2)
			d.min_nodes = 2;
		char *err = NULL;
		int rc = submit(&d, 1000, &err);
		if (rc != 0)
			ref++;
		else if (d.tres_per_node && strstr(d.tres_per_node, "gpu:mem:")) {
			un++;
			printf("UNTRANSLATED %s\n", d.tres_per_node);
		}
		if (d.req_nodes)
			pin++;
		free(d.tres_per_node);
		free(d.req_nodes);
		free(d.partition);
		free(err);
	}
	pthread_mutex_lock(&mu);
	jobs += n, untranslated += un, refused += ref, pinned += pin;
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s PLUGIN.so THREADS SECONDS\n", argv[0]);
		return 2;
	}
	int threads = atoi(argv[2]);
	seconds = atoi(argv[3]);
	void *so = load_plugin(2, argv);
	void (*fini)(void) = (void (*)(void))dlsym(so, "fini");
	submit = (int (*)(job_desc_msg_t *, uint32_t, char **))dlsym(so, "job_submit");
	if (!fini || !submit || threads < 1 || threads > 256) {
		fprintf(stderr, "plugin lacks fini/job_submit, or bad THREADS\n");
		return 1;
	}
	pthread_t t[256];
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, storm, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("jobs=%ld untranslated=%ld refused=%ld pinned=%ld\n", jobs, untranslated, refused, pinned);
	fflush(stdout);
	fini();
	return 0;
}
