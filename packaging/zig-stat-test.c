/*
 * packaging/zig-stat-test.sh's program: stat, fstat, lstat and fstatat (the 64 names
 * when built with _FILE_OFFSET_BITS=64), mknod and mknodat, as packaging/zig-cc links
 * them, against what coreutils' stat said of the same files.
 *
 *   zig-stat-test DIR SIZE MODE INODE   (DIR/file: SIZE bytes, MODE octal; DIR/link to it)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fails;

static void want(const char *what, long long got, long long exp)
{
	if (got != exp) {
		printf("FAIL %s: %lld, want %lld\n", what, got, exp);
		fails++;
	}
}

static void same(const char *what, const struct stat *s, long long size, long long mode, long long ino)
{
	char b[256];
	snprintf(b, sizeof b, "%s st_size", what), want(b, s->st_size, size);
	snprintf(b, sizeof b, "%s st_mode", what), want(b, s->st_mode, S_IFREG | mode);
	snprintf(b, sizeof b, "%s st_ino", what), want(b, s->st_ino, ino);
	snprintf(b, sizeof b, "%s st_nlink", what), want(b, s->st_nlink, 1);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s DIR SIZE MODE INODE\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1];
	long long size = strtoll(argv[2], 0, 10), mode = strtoll(argv[3], 0, 8), ino = strtoll(argv[4], 0, 10);
	char file[4096], link[4096], fifo[4096], missing[4096];
	snprintf(file, sizeof file, "%s/file", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(missing, sizeof missing, "%s/missing", dir);
	struct stat s;
	int fd = open(file, O_RDONLY), dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || dfd < 0) {
		perror("open");
		return 1;
	}

	memset(&s, 0, sizeof s), want("stat", stat(file, &s), 0), same("stat", &s, size, mode, ino);
	memset(&s, 0, sizeof s), want("stat of the link", stat(link, &s), 0), same("stat of the link", &s, size, mode, ino);
	memset(&s, 0, sizeof s), want("fstat", fstat(fd, &s), 0), same("fstat", &s, size, mode, ino);
	memset(&s, 0, sizeof s), want("lstat", lstat(file, &s), 0), same("lstat", &s, size, mode, ino);
	memset(&s, 0, sizeof s), want("fstatat", fstatat(dfd, "file", &s, 0), 0), same("fstatat", &s, size, mode, ino);
	memset(&s, 0, sizeof s), want("fstatat of the link", fstatat(dfd, "link", &s, 0), 0),
		same("fstatat of the link", &s, size, mode, ino);

	memset(&s, 0, sizeof s), want("lstat of the link", lstat(link, &s), 0);
	want("lstat of the link: S_ISLNK", S_ISLNK(s.st_mode), 1);
	want("lstat of the link: st_size", s.st_size, (long long)strlen("file"));
	memset(&s, 0, sizeof s), want("fstatat nofollow", fstatat(dfd, "link", &s, AT_SYMLINK_NOFOLLOW), 0);
	want("fstatat nofollow: S_ISLNK", S_ISLNK(s.st_mode), 1);
	memset(&s, 0, sizeof s), want("stat of the folder", stat(dir, &s), 0);
	want("stat of the folder: S_ISDIR", S_ISDIR(s.st_mode), 1);

	/* Failures set the errno the program reads. */
	errno = 0, want("stat of a missing file", stat(missing, &s), -1), want("stat's errno", errno, ENOENT);
	errno = 0, want("lstat of a missing file", lstat(missing, &s), -1), want("lstat's errno", errno, ENOENT);
	errno = 0, want("fstat of a bad fd", fstat(-1, &s), -1), want("fstat's errno", errno, EBADF);
	errno = 0, want("fstatat of a missing file", fstatat(dfd, "missing", &s, 0), -1), want("fstatat's errno", errno, ENOENT);

	/* mknod and mknodat: a FIFO needs no privilege. */
	want("mknod", mknod(fifo, S_IFIFO | 0600, 0), 0);
	memset(&s, 0, sizeof s), want("stat of mknod's FIFO", stat(fifo, &s), 0);
	want("mknod's FIFO: mode", s.st_mode & (S_IFMT | 07777), S_IFIFO | 0600);
	unlink(fifo);
	want("mknodat", mknodat(dfd, "fifo", S_IFIFO | 0600, 0), 0);
	memset(&s, 0, sizeof s), want("lstat of mknodat's FIFO", lstat(fifo, &s), 0);
	want("mknodat's FIFO: S_ISFIFO", S_ISFIFO(s.st_mode), 1);
	errno = 0, want("mknod over a file", mknod(file, S_IFIFO | 0600, 0), -1), want("mknod's errno", errno, EEXIST);
	unlink(fifo);

	printf("%s (struct stat %zu bytes): %s\n", argv[0], sizeof s, fails ? "FAIL" : "ok");
	return fails != 0;
}
