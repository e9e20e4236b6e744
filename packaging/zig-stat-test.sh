#!/bin/sh
# Checks packaging/zig-stat.c, the stat family packaging/zig-cc links into every package
# in place of zig's libc_nonshared.a members: a C program linked by zig-cc, with and
# without _FILE_OFFSET_BITS=64 (stat64... and stat...), stats a file, a link to it, its
# folder and missing files, makes FIFOs with mknod and mknodat, and compares what it gets
# with what coreutils' stat (this machine's own glibc) says; its imports stay at glibc
# 2.28 or older, and the stat family comes from libc.so.6 (__xstat...), not the archive.
# packaging/build.sh runs it before building anything.
#
#   ZIG=... packaging/zig-stat-test.sh         (packaging/zig.sh prints a ZIG)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
: "${ZIG:=$("$here/zig.sh")}"
export ZIG
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 022
mkdir "$work/d"
head -c 12345 /dev/zero >"$work/d/file"
chmod 640 "$work/d/file"
ln -s file "$work/d/link"
size=$(stat -c %s "$work/d/file") mode=$(stat -c %a "$work/d/file") ino=$(stat -c %i "$work/d/file")
[ "$size $mode" = "12345 640" ] || { echo "$0: coreutils' stat says $size $mode, not 12345 640" >&2; exit 1; }

for bits in 32 64; do
	flags=
	[ $bits = 32 ] || flags=-D_FILE_OFFSET_BITS=64
	prog=$work/zig-stat-test-$bits
	"$here/zig-cc" -O2 -Wall -Werror $flags -o "$prog" "$here/zig-stat-test.c"
	"$prog" "$work/d" "$size" "$mode" "$ino"
	names=$(objdump -T "$prog" | awk '/\*UND\*/ && /stat|mknod/ {print $NF "@" substr($(NF-1), 2, length($(NF-1)) - 2)}' | sort | paste -sd ' ' -)
	case $bits in
	32) want="__fxstat@GLIBC_2.2.5 __fxstatat@GLIBC_2.4 __lxstat@GLIBC_2.2.5 __xmknod@GLIBC_2.2.5 __xmknodat@GLIBC_2.4 __xstat@GLIBC_2.2.5" ;;
	64) want="__fxstat64@GLIBC_2.2.5 __fxstatat64@GLIBC_2.4 __lxstat64@GLIBC_2.2.5 __xmknod@GLIBC_2.2.5 __xmknodat@GLIBC_2.4 __xstat64@GLIBC_2.2.5" ;;
	esac
	if [ "$names" != "$want" ]; then
		echo "$0: the $bits-bit program imports '$names' for its stat family, want '$want'" >&2
		exit 1
	fi
	newest=$(objdump -T "$prog" | grep -o '(GLIBC_[0-9.]*)' | tr -d '()' | sed 's/^GLIBC_//' | sort -Vu | tail -1)
	if [ "$(printf '%s\n2.28\n' "$newest" | sort -V | tail -1)" != 2.28 ]; then
		echo "$0: the $bits-bit program imports glibc $newest symbols, newer than 2.28" >&2
		exit 1
	fi
	if objdump -t "$prog" | grep -Eq '[[:space:]](errno|__libc_errno)$'; then
		echo "$0: the $bits-bit program defines an errno of its own (zig's csu/errno.c)" >&2
		exit 1
	fi
done
echo "zig-stat: stat, fstat, lstat, fstatat, mknod, mknodat (and 64) through glibc 2.28's __xstat family: ok"
