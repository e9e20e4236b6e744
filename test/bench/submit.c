/*
 * submit: batch-job submissions through libslurm from a few processes, so that
 * slurmctld (and its job_submit plugins), not the sbatch client's start-up, is what
 * limits the rate. Jobs are held (priority 0) so that scheduling does not run them.
 *
 *   submit PROCS JOBS_PER_PROC TRES_PER_NODE
 *   submit --lines      (one held job per line of stdin, its tres_per_node; for fuzzing)
 *
 * Prints "submitted=N failed=N seconds=S rate=R"; the first refusal goes to stderr.
 * With --lines, prints "ok JOBID" or "refused MESSAGE" for each line, in order.
 * GPUMEM_SUBMIT_SCRIPT=FILE makes FILE's contents every job's batch script, as a user
 * calling libslurm may send any script (default: one that runs true).
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "gpumem_gates.h"

#define MAX_PROCS 256

static char *script = "#!/bin/sh\ntrue\n";

/* read_script sets script to the contents of GPUMEM_SUBMIT_SCRIPT's file, if set. */
static int read_script(void)
{
	const char *path = getenv("GPUMEM_SUBMIT_SCRIPT");
	FILE *f;
	long n;

	if (!path)
		return 0;
	if (!(f = fopen(path, "r")) || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || !(script = calloc(1, (size_t)n + 1)) ||
	    fread(script, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		return -1;
	}
	fclose(f);
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int submit_one(const char *tres, uint32_t *job_id)
{
	char *env[] = {"GPUMEM_BENCH=1", NULL};
	job_desc_msg_t d;
	submit_response_msg_t *resp = NULL;
	slurm_init_job_desc_msg(&d);
	d.name = "gpumem-bench";
	d.script = script;
	d.priority = 0;
	d.user_id = getuid();
	d.group_id = getgid();
	d.min_nodes = 1;
	d.work_dir = "/tmp";
	d.environment = env;
	d.env_size = 1;
	d.tres_per_node = (char *)tres;
	int rc = slurm_submit_batch_job(&d, &resp);
	if (resp) {
#if GPUMEM_SUBMIT_RESPONSE_STEP_ID
		/* The response names the job by a step id (slurm.h of slurm-25-11-0-1 on;
		 * 25.05.8's still has job_id, which a 25.05 lab built from source showed). */
		*job_id = resp->step_id.job_id;
#else
		*job_id = resp->job_id;
#endif
		slurm_free_submit_response_response_msg(resp);
	}
	return rc;
}

/* submit_lines submits one job per line of stdin; a line may hold anything but NUL. */
static int submit_lines(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		uint32_t id = 0;
		if (submit_one(line, &id) == SLURM_SUCCESS)
			printf("ok %u\n", id);
		else
			printf("refused %s\n", slurm_strerror(errno));
		fflush(stdout);
	}
	free(line);
	return 0;
}

/* submit_n returns how many of n submissions failed. */
static int submit_n(int n, const char *tres)
{
	int failed = 0;
	for (int i = 0; i < n; i++) {
		uint32_t id;
		if (submit_one(tres, &id) != SLURM_SUCCESS && failed++ == 0)
			fprintf(stderr, "submit %s: %s\n", tres, slurm_strerror(errno));
	}
	return failed;
}

int main(int argc, char **argv)
{
	if (read_script() != 0)
		return 2;
	if (argc == 2 && strcmp(argv[1], "--lines") == 0) {
		slurm_init(NULL);
		return submit_lines();
	}
	if (argc != 4) {
		fprintf(stderr, "usage: %s PROCS JOBS_PER_PROC TRES_PER_NODE (e.g. 8 500 gres:gpu:mem:20g)\n", argv[0]);
		return 2;
	}
	int procs = atoi(argv[1]), per = atoi(argv[2]);
	if (procs < 1 || procs > MAX_PROCS || per < 1) {
		fprintf(stderr, "PROCS must be 1..%d and JOBS_PER_PROC >= 1, got %s %s\n", MAX_PROCS, argv[1], argv[2]);
		return 2;
	}
	slurm_init(NULL);
	int fds[MAX_PROCS][2];
	double t0 = now();
	for (int p = 0; p < procs; p++) {
		if (pipe(fds[p]) != 0) {
			perror("pipe");
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			close(fds[p][0]);
			int failed = submit_n(per, argv[3]);
			_exit(write(fds[p][1], &failed, sizeof failed) == sizeof failed ? 0 : 1);
		}
		close(fds[p][1]);
	}
	int failed = 0;
	for (int p = 0; p < procs; p++) {
		int f;
		if (read(fds[p][0], &f, sizeof f) != sizeof f)
			f = per; /* a child that died reports nothing: count all its jobs as failed */
		failed += f;
	}
	while (wait(NULL) > 0)
		;
	double secs = now() - t0;
	int total = procs * per;
	printf("submitted=%d failed=%d seconds=%.3f rate=%.1f\n", total - failed, failed, secs,
	       (total - failed) / secs);
	slurm_fini();
	return failed == total ? 1 : 0;
}
