/*
 * procview.so: the lab's one stand-in for a pure cgroup v2 node (docs/lab.md, "The
 * fence pass"). These machines mount cgroup2 at /sys/fs/cgroup/unified beside the v1
 * controllers, so the kernel lists every v1 hierarchy in /proc/PID/cgroup, and Slurm's
 * cgroup/v2 plugin refuses such a host at start ("Hybrid mode is not supported": it
 * wants the 0:: line first). Preloaded into the lab's slurmd (and so its slurmstepds),
 * this shows them only the 0:: line of any /proc/PID/cgroup they open. Nothing else is
 * changed: Slurm's own plugin makes every directory on the real cgroup2 hierarchy and
 * moves the real processes there.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int is_proc_cgroup(const char *p)
{
	size_t n;
	if (!p || strncmp(p, "/proc/", 6) != 0)
		return 0;
	n = strlen(p);
	return n > 13 && strcmp(p + n - 7, "/cgroup") == 0 && strchr(p + 6, '/') == p + n - 7;
}

/* filtered returns a memfd holding only the 0:: line of path, or -1 to fall through. */
static int filtered(const char *path)
{
	static int (*real_open)(const char *, int, ...);
	char buf[65536], *line, *save = NULL;
	ssize_t n, got = 0;
	int fd, out;
	if (!real_open)
		real_open = dlsym(RTLD_NEXT, "open");
	fd = real_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	out = memfd_create("procview", MFD_CLOEXEC);
	if (out < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "0::", 3) == 0) {
			if (write(out, line, strlen(line)) < 0 || write(out, "\n", 1) < 0) {
				close(out);
				return -1;
			}
		}
	lseek(out, 0, SEEK_SET);
	return out;
}

#define OPEN_LIKE(name, ...)                                                       \
	int name(__VA_ARGS__, int flags, ...)                                       \
	{                                                                           \
		static int (*real)(__VA_ARGS__, int, ...);                           \
		mode_t mode = 0;                                                    \
		if (flags & (O_CREAT | O_TMPFILE)) {                                \
			va_list ap;                                                 \
			va_start(ap, flags);                                        \
			mode = va_arg(ap, mode_t);                                  \
			va_end(ap);                                                 \
		}                                                                   \
		if (is_proc_cgroup(path)) {                                         \
			int fd = filtered(path);                                    \
			if (fd >= 0)                                                \
				return fd;                                          \
		}                                                                   \
		if (!real)                                                          \
			real = dlsym(RTLD_NEXT, #name);                             \
		return CALL;                                                        \
	}

#define CALL real(path, flags, mode)
OPEN_LIKE(open, const char *path)
OPEN_LIKE(open64, const char *path)
#undef CALL
#define CALL real(dirfd, path, flags, mode)
OPEN_LIKE(openat, int dirfd, const char *path)
OPEN_LIKE(openat64, int dirfd, const char *path)
#undef CALL

FILE *fopen(const char *path, const char *mode)
{
	static FILE *(*real)(const char *, const char *);
	if (is_proc_cgroup(path) && mode[0] == 'r') {
		int fd = filtered(path);
		if (fd >= 0)
			return fdopen(fd, "r");
	}
	if (!real)
		real = dlsym(RTLD_NEXT, "fopen");
	return real(path, mode);
}

FILE *fopen64(const char *path, const char *mode) { return fopen(path, mode); }
