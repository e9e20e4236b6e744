/* What both stand-ins for a Slurm program share: the program's log functions, which the
 * plugins find with dlsym and which write "LEVEL: message" lines to stderr, and loading the
 * plugin as Slurm does. Define the plugin's other Slurm functions before including this. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

static void say(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void slurm_error(const char *fmt, ...) { va_list ap; va_start(ap, fmt); say("error", fmt, ap); va_end(ap); }
void slurm_info(const char *fmt, ...) { va_list ap; va_start(ap, fmt); say("info", fmt, ap); va_end(ap); }
void slurm_debug(const char *fmt, ...) { va_list ap; va_start(ap, fmt); say("debug", fmt, ap); va_end(ap); }

/* load_plugin dlopens argv[1], runs its init() and returns its handle, or exits. */
static void *load_plugin(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN.so < lines\n", argv[0]);
		exit(2);
	}
	void *so = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!so) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		exit(1);
	}
	int (*init)(void) = (int (*)(void))dlsym(so, "init");
	if (!init || init() != 0) {
		fprintf(stderr, "%s: no init() or it failed\n", argv[1]);
		exit(1);
	}
	return so;
}
