/* A stand-in for sbatch around cli_filter_gpumem.so: it exports the client functions the
 * plugin looks up at run time and runs the filter on one --gres per line of stdin.
 *
 *   client_harness PLUGIN.so < lines
 *
 * Everything the plugin logs goes to stderr as "LEVEL: message", one line each, as the
 * client's own log would put it on the user's terminal (info and error) or keep it for -v
 * (debug). For each line stdout gets "rc=RC gres=VALUE". */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

static char *gres; /* the one option this client holds */

char *slurm_xstrdup(const char *s) { return s ? strdup(s) : NULL; }

void slurm_xfree(void **p)
{
	free(*p);
	*p = NULL;
}

char *slurm_option_get(void *opt, const char *name)
{
	return strcmp(name, "gres") == 0 ? slurm_xstrdup(gres) : NULL;
}

int slurm_option_set(void *opt, const char *name, const char *value, bool early)
{
	if (strcmp(name, "gres") != 0)
		return 1;
	free(gres);
	gres = strdup(value);
	return 0;
}

bool slurm_option_reset(void *opt, const char *name)
{
	if (strcmp(name, "gres") != 0)
		return false;
	free(gres);
	gres = NULL;
	return true;
}

bool slurm_option_isset(void *opt, const char *name)
{
	return strcmp(name, "gres") == 0 && gres;
}

int slurm_load_job(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags) { return -1; }
void slurm_free_job_info_msg(job_info_msg_t *msg) {}

#include "harness.h"

int main(int argc, char **argv)
{
	void *so = load_plugin(argc, argv);
	int (*pre)(void *, int) = (int (*)(void *, int))dlsym(so, "cli_filter_p_pre_submit");
	if (!pre) {
		fprintf(stderr, "plugin lacks cli_filter_p_pre_submit\n");
		return 1;
	}
	char line[4096];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		free(gres);
		gres = strdup(line);
		int rc = pre(NULL, 0);
		printf("rc=%d gres=%s\n", rc, gres ? gres : "(null)");
	}
	return 0;
}
