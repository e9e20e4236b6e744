/*
 * spank_gpumem.so: where Slurm runs no Prolog inside the job's cgroup (22.05 has no
 * PrologFlags=RunInJob), the driver fence's hook runs from slurmstepd through SPANK.
 *
 * plugstack.conf:
 *   required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_gpumem.so /usr/sbin/gpumemd [--config FILE]
 *
 * Every decision is gpumemd's; this file only runs it at the two moments Slurm offers
 * (read in slurmd/slurmstepd/mgr.c, 22.05 to 26.05):
 *  - the extern step (PrologFlags=Contain): task_post_fork runs as root after the
 *    extern step's process was added to the job's cgroup and before slurmstepd tells
 *    slurmd its setup is done, so before any other step of the job can start:
 *    `gpumemd prolog` sets the job's limits there and records the outcome;
 *  - every other step (batch, interactive, srun): init runs as root in that step's
 *    slurmstepd before its tasks: `gpumemd fence-check` fails the step when the node
 *    promised a fence the job did not get (a failing extern hook is only logged by
 *    Slurm, so this is what keeps such a job from running unfenced).
 * gpumemd runs with an environment built here (job id, uid, node name from
 * slurmstepd's own environment), never the user's. A "%n" in an argument becomes the
 * node name, as in Slurm's own paths.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(gpumem, 1);

#define MAX_ARGS 16
#define ARG_LEN 1024

static int expand(char *dst, const char *src, const char *node)
{
	size_t n = 0;
	for (; *src; src++) {
		const char *add = NULL;
		char one[2] = {*src, 0};
		if (src[0] == '%' && src[1] == 'n') {
			add = node;
			src++;
		} else {
			add = one;
		}
		size_t l = strlen(add);
		if (n + l >= ARG_LEN)
			return -1;
		memcpy(dst + n, add, l);
		n += l;
	}
	dst[n] = 0;
	return 0;
}

/* run_gpumemd runs `av[0] cmd av[1..]` and waits for it; 0 when it exited 0. */
static int run_gpumemd(spank_t sp, int ac, char **av, const char *cmd)
{
	uint32_t job = 0;
	uid_t uid = 0;
	const char *node = getenv("SLURMD_NODENAME");
	char args[MAX_ARGS + 2][ARG_LEN], envs[4][64 + ARG_LEN];
	char *argv[MAX_ARGS + 3], *envp[5];
	int i, status = 0, errp[2];
	char msg[2048], drop[512];
	size_t n = 0;
	pid_t pid;

	if (ac < 1 || ac > MAX_ARGS) {
		slurm_error("gpumem: plugstack.conf must name gpumemd (and at most %d arguments)", MAX_ARGS - 1);
		return -1;
	}
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || !node) {
		slurm_error("gpumem: no job id, uid or node name from slurmstepd");
		return -1;
	}
	if (expand(args[0], av[0], node) < 0)
		return -1;
	snprintf(args[1], ARG_LEN, "%s", cmd);
	for (i = 1; i < ac; i++)
		if (expand(args[i + 1], av[i], node) < 0) {
			slurm_error("gpumem: argument %d too long", i);
			return -1;
		}
	for (i = 0; i <= ac; i++)
		argv[i] = args[i];
	argv[ac + 1] = NULL;
	snprintf(envs[0], sizeof(envs[0]), "SLURM_JOB_ID=%u", job);
	snprintf(envs[1], sizeof(envs[1]), "SLURM_JOB_UID=%u", (unsigned) uid);
	snprintf(envs[2], sizeof(envs[2]), "SLURMD_NODENAME=%s", node);
	snprintf(envs[3], sizeof(envs[3]), "GPUMEM_HOOK=spank");
	for (i = 0; i < 4; i++)
		envp[i] = envs[i];
	envp[4] = NULL;

	/* gpumemd's stderr says why it refused: it goes to slurmd's log (the step's). */
	if (pipe(errp) < 0) {
		slurm_error("gpumem: pipe: %m");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		slurm_error("gpumem: fork: %m");
		close(errp[0]);
		close(errp[1]);
		return -1;
	}
	if (pid == 0) {
		close(errp[0]);
		dup2(errp[1], STDERR_FILENO);
		execve(argv[0], argv, envp);
		fprintf(stderr, "gpumem: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(errp[1]);
	/* Read all of it (a child blocked on a full pipe never exits), keep the start. */
	for (;;) {
		ssize_t r = read(errp[0], n < sizeof(msg) - 1 ? msg + n : drop,
				 n < sizeof(msg) - 1 ? sizeof(msg) - 1 - n : sizeof(drop));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (n < sizeof(msg) - 1)
			n += r;
	}
	msg[n] = 0;
	close(errp[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			slurm_error("gpumem: waitpid: %m");
			return -1;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	for (char *line = strtok(msg, "\n"); line; line = strtok(NULL, "\n"))
		slurm_error("%s", line);
	slurm_error("gpumem: job %u: `%s %s` failed (status %d)", job, argv[0], cmd, status);
	return -1;
}

static int step_id(spank_t sp, uint32_t *step)
{
	return spank_get_item(sp, S_JOB_STEPID, step) == ESPANK_SUCCESS ? 0 : -1;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	uint32_t step;
	if (!spank_remote(sp) || step_id(sp, &step) < 0 || step != SLURM_EXTERN_CONT)
		return 0;
	return run_gpumemd(sp, ac, av, "prolog");
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	uint32_t step;
	if (spank_context() != S_CTX_REMOTE || step_id(sp, &step) < 0 || step == SLURM_EXTERN_CONT)
		return 0;
	return run_gpumemd(sp, ac, av, "fence-check");
}
