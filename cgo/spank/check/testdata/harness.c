/*
 * A stand-in for slurmstepd around spank_gpumem.c: it runs one of the plugin's hooks with
 * the plugin's plugstack.conf arguments and prints "rc=N" when it returns. Slurm's
 * functions the plugin calls are stubbed here; slurm_error prints "error: ..." on stdout.
 *
 *   harness prolog|fence-check [PLUGIN ARGUMENTS...]
 */
#include "../../spank_gpumem.c"

#include <stdarg.h>

static uint32_t stub_step;

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	va_list ap;
	va_start(ap, item);
	switch (item) {
	case S_JOB_ID:
		*va_arg(ap, uint32_t *) = 42;
		break;
	case S_JOB_UID:
		*va_arg(ap, uid_t *) = getuid();
		break;
	case S_JOB_STEPID:
		*va_arg(ap, uint32_t *) = stub_step;
		break;
	default:
		va_end(ap);
		return ESPANK_BAD_ARG;
	}
	va_end(ap);
	return ESPANK_SUCCESS;
}

int spank_remote(spank_t sp)
{
	return 1;
}

spank_context_t spank_context(void)
{
	return S_CTX_REMOTE;
}

void slurm_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("error: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
}

int main(int argc, char **argv)
{
	int rc;
	if (argc < 2)
		return 2;
	setenv("SLURMD_NODENAME", "n1", 1);
	if (strcmp(argv[1], "prolog") == 0) {
		stub_step = SLURM_EXTERN_CONT;
		rc = slurm_spank_task_post_fork(NULL, argc - 2, argv + 2);
	} else {
		stub_step = 0;
		rc = slurm_spank_init(NULL, argc - 2, argv + 2);
	}
	printf("rc=%d\n", rc);
	return 0;
}
