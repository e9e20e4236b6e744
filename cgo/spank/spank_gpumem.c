/*
 * spank_gpumem.so: where Slurm runs no Prolog inside the job's cgroup (22.05 has no
 * PrologFlags=RunInJob), the driver fence's hook runs from slurmstepd through SPANK.
 *
 * plugstack.conf:
 *   required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_gpumem.so [timeout=SECONDS] /usr/sbin/gpumemd [--config FILE]
 *
 * timeout=SECONDS (whole seconds, 1 to 3600; default 120), before gpumemd's path, is how
 * long gpumemd may run: past it, gpumemd and everything it started (its process group)
 * are killed, and the hook fails as if gpumemd had failed, so a hung gpumemd never holds
 * a job's step. A bad value fails every hook until plugstack.conf is fixed.
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
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(gpumem, 1);

#define MAX_ARGS 16
#define ARG_LEN 1024
#define TIMEOUT 120
#define MAX_TIMEOUT 3600

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

/* options takes the plugin's own timeout=SECONDS from the front of av; -1 when bad. */
static int options(int *ac, char ***av, int *timeout)
{
	*timeout = TIMEOUT;
	while (*ac > 0 && strncmp((*av)[0], "timeout=", 8) == 0) {
		const char *v = (*av)[0] + 8;
		char *end;
		long t;
		errno = 0;
		t = strtol(v, &end, 10);
		if (errno || end == v || *end || t < 1 || t > MAX_TIMEOUT) {
			slurm_error("gpumem: plugstack.conf: bad %s: the timeout is whole seconds, 1 to %d",
				    (*av)[0], MAX_TIMEOUT);
			return -1;
		}
		*timeout = (int) t;
		(*ac)--;
		(*av)++;
	}
	return 0;
}

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * run_gpumemd runs `av[0] cmd av[1..]` (after the plugin's options) and waits for it,
 * at most the timeout; 0 when it exited 0.
 */
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
	int timeout, state = 0; /* 1 when it exited, -1 when it cannot be waited for */
	long long deadline;

	if (options(&ac, &av, &timeout) < 0)
		return -1;
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
		setpgid(0, 0); /* its own group, so a timeout kills all it started */
		close(errp[0]);
		dup2(errp[1], STDERR_FILENO);
		execve(argv[0], argv, envp);
		fprintf(stderr, "gpumem: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* either side may be first */
	close(errp[1]);
	/*
	 * Read all of it (a child blocked on a full pipe never exits), keep the start, and
	 * reap it, all before the deadline. Past it, kill its whole group: what it started
	 * may hang too, or hold the pipe open after it is gone.
	 */
	deadline = now_ms() + (long long) timeout * 1000;
	for (;;) {
		long long left = deadline - now_ms();
		struct pollfd p = {errp[0], POLLIN, 0};
		ssize_t r;
		if (errp[0] < 0) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid) {
				state = 1;
				break;
			}
			if (w < 0 && errno != EINTR) {
				slurm_error("gpumem: waitpid: %m");
				state = -1;
				break;
			}
		}
		if (left <= 0)
			break;
		if (errp[0] < 0) {
			poll(NULL, 0, left < 20 ? (int) left : 20);
			continue;
		}
		if (poll(&p, 1, (int) left) <= 0)
			continue;
		r = read(errp[0], n < sizeof(msg) - 1 ? msg + n : drop,
			 n < sizeof(msg) - 1 ? sizeof(msg) - 1 - n : sizeof(drop));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			close(errp[0]);
			errp[0] = -1;
		} else if (n < sizeof(msg) - 1) {
			n += r;
		}
	}
	msg[n] = 0;
	if (errp[0] >= 0)
		close(errp[0]);
	if (state < 0)
		return -1;
	if (state == 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		/* Reap it; one stuck in the kernel may take a while: not past 5 s. */
		for (i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++)
			poll(NULL, 0, 10);
		for (char *line = strtok(msg, "\n"); line; line = strtok(NULL, "\n"))
			slurm_error("%s", line);
		slurm_error("gpumem: job %u: `%s %s` did not finish in %d s (plugstack.conf timeout=%d); killed",
			    job, argv[0], cmd, timeout, timeout);
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
