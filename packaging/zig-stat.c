/*
 * stat, fstat, lstat, fstatat, mknod, mknodat and their 64 variants for glibc 2.28,
 * x86_64, linked into every program and plugin packaging/zig-cc links.
 *
 * glibc before 2.33 exports none of these from libc.so.6: a program gets them from
 * libc_nonshared.a, small functions calling __xstat(_STAT_VER, ...) and friends, which
 * libc.so.6 does export. zig builds its own libc_nonshared.a from the newer glibc it
 * bundles, whose stat family is a direct system call, under the plain LGPL-2.1-or-later
 * (not the linking exception of atexit.c and its like), and which sets an errno of its
 * own (csu/errno.c, linked in with it), not the one errno reads. Defined here, the
 * archive's members are never pulled: each function is the call glibc 2.28's own
 * libc_nonshared.a makes, to the entry point glibc 2.28 exports (GLIBC_2.2.5 on x86_64).
 *
 * Hidden: a plugin does not export them to the program that loads it. No system header
 * declares them here, so no _FILE_OFFSET_BITS redirect (stat to stat64) can rename them.
 */
#if !defined(__x86_64__) || !defined(__LP64__)
#error "zig-stat.c: _STAT_VER and _MKNOD_VER below are x86_64's"
#endif

/* glibc 2.28's sysdeps/unix/sysv/linux/x86/bits/stat.h, for __x86_64__. */
#define _STAT_VER_LINUX 1
#define _STAT_VER _STAT_VER_LINUX
#define _MKNOD_VER_LINUX 0
#define _MKNOD_VER _MKNOD_VER_LINUX

typedef unsigned int mode_t_;       /* mode_t */
typedef unsigned long int dev_t_;   /* dev_t */
struct stat;
struct stat64;

extern int __xstat(int, const char *, struct stat *);
extern int __fxstat(int, int, struct stat *);
extern int __lxstat(int, const char *, struct stat *);
extern int __fxstatat(int, int, const char *, struct stat *, int);
extern int __xstat64(int, const char *, struct stat64 *);
extern int __fxstat64(int, int, struct stat64 *);
extern int __lxstat64(int, const char *, struct stat64 *);
extern int __fxstatat64(int, int, const char *, struct stat64 *, int);
extern int __xmknod(int, const char *, mode_t_, dev_t_ *);
extern int __xmknodat(int, int, const char *, mode_t_, dev_t_ *);

#define hidden __attribute__((visibility("hidden")))

hidden int stat(const char *file, struct stat *buf) { return __xstat(_STAT_VER, file, buf); }
hidden int fstat(int fd, struct stat *buf) { return __fxstat(_STAT_VER, fd, buf); }
hidden int lstat(const char *file, struct stat *buf) { return __lxstat(_STAT_VER, file, buf); }
hidden int fstatat(int fd, const char *file, struct stat *buf, int flag)
{
	return __fxstatat(_STAT_VER, fd, file, buf, flag);
}

hidden int stat64(const char *file, struct stat64 *buf) { return __xstat64(_STAT_VER, file, buf); }
hidden int fstat64(int fd, struct stat64 *buf) { return __fxstat64(_STAT_VER, fd, buf); }
hidden int lstat64(const char *file, struct stat64 *buf) { return __lxstat64(_STAT_VER, file, buf); }
hidden int fstatat64(int fd, const char *file, struct stat64 *buf, int flag)
{
	return __fxstatat64(_STAT_VER, fd, file, buf, flag);
}

hidden int mknod(const char *path, mode_t_ mode, dev_t_ dev)
{
	return __xmknod(_MKNOD_VER, path, mode, &dev);
}
hidden int mknodat(int fd, const char *path, mode_t_ mode, dev_t_ dev)
{
	return __xmknodat(_MKNOD_VER, fd, path, mode, &dev);
}
