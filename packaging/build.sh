#!/bin/sh
# Build gpumem's packages, deb and rpm, with nFPM (the packaging/nfpm module):
#   gpumem-plugins-REL  both Slurm plugins and the SPANK plugin, built for each Slurm
#                       release REL whose headers this machine has, depending on
#                       exactly that release
#   gpumemd             the node sidecar, its systemd unit, defaults and state folder
#   gpumemctl           the admin CLI, its man pages and completions, the steer unit
#
#   packaging/build.sh [BINDIR] [OUTDIR]     (defaults: build/package dist)
#
# Everything packaged is compiled here, not taken from `make build`: with
# packaging/zig-cc, zig's C compiler linking against glibc 2.28's symbols, so that each
# binary and plugin starts on every distribution the packages are for (RHEL/Rocky 8's
# glibc 2.28 is the oldest; Debian 12's gcc would ask for 2.34), and none links a
# plain-LGPL member of zig's libc_nonshared.a (zig-cc checks each link's map).
# packaging/zig.sh installs zig from the npm registry the first time. gpumemd and gpumemctl go to BINDIR.
#
# Slurm headers: for each release the release table marks for CI (Debian's,
# internal/slurmrel/releases.txt), from the lab's chroot of it (make package makes them:
# bookworm's for 22.05, trixie's for 24.11, forky's for 26.05). PLUGIN_RELEASES="REL=DIR
# ..." names other include folders; PLUGIN_SOURCES="REL=DIR ..." a release's source
# tree, from which job_modify's job-record offsets are measured (cgo/build.sh,
# SLURM_SOURCE) where cgo/include/gpumem_jobrec.h has no entry for it. The version comes from git tags or CHANGELOG.md's
# newest release (packaging/version.sh --deb); VERSION=v0.1.0 overrides it for a tree without .git. FORMATS=deb builds one
# format only.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin=${1:-$top/build/package}
out=${2:-$top/dist}
cache=${LAB_CHROOT_CACHE:-/var/cache/gpumem-lab}
if [ -z "${PLUGIN_RELEASES:-}" ]; then
	for r in $(cd "$top" && CGO_ENABLED=0 go run ./cmd/slurm-release names --ci); do
		PLUGIN_RELEASES="${PLUGIN_RELEASES:-}${PLUGIN_RELEASES:+ }$r=$(LAB_CHROOT=1 LAB_SLURM=$r "$top/test/lab/lab.sh" where | sed -n 's/^root=//p')/usr/include"
	done
fi
releases=$PLUGIN_RELEASES
version=$("$here/version.sh" --deb)
mkdir -p "$out" "$bin"
out=$(cd "$out" && pwd)
bin=$(cd "$bin" && pwd)

# The compiler of every cgo build below (cgo/build.sh's too): zig-cc, for glibc 2.28.
# zig's C library headers are its own, so only Slurm's headers come from this machine
# (cgo/build.sh passes their slurm/ folder alone).
ZIG=$("$here/zig.sh")
CC=$here/zig-cc CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
export ZIG CC CGO_ENABLED CGO_CFLAGS
# zig-cc links packaging/zig-stat.c's stat family into everything below, in place of
# zig's plain-LGPL libc_nonshared.a members, and fails a link that keeps any of those:
# first the check that the stat family it links gives what this machine's stat says.
"$here/zig-stat-test.sh" >&2
go -C "$top" build -trimpath -ldflags "$("$here/version.sh" --ldflags)" -o "$bin/" ./cmd/gpumemd ./cmd/gpumemctl

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Man pages (gpumemctl's section 1, gpumemd's section 8) and completions come from the
# binaries' own command trees, so they say what -h says. Compressed without a
# timestamp, so the same source gives the same package; without $GPUMEM_CONF, which
# would put a lab's path in the pages as --config's default.
unset GPUMEM_CONF
mkdir -p "$work/gen/man" "$work/gen/completions"
"$bin/gpumemctl" man "$work/gen/man"
"$bin/gpumemd" man "$work/gen/man"
gzip -9n "$work"/gen/man/*.1 "$work"/gen/man/*.8
for sh in bash zsh fish; do
	"$bin/gpumemctl" completion "$sh" >"$work/gen/completions/gpumemctl.$sh"
done

set --
for r in $releases; do
	rel=${r%%=*} inc=${r#*=}
	if [ ! -f "$inc/slurm/slurm_version.h" ]; then
		echo "$0: no Slurm $rel headers in $inc: gpumem-plugins-$rel is not built" >&2
		continue
	fi
	src=""
	for p in ${PLUGIN_SOURCES:-}; do
		[ "${p%%=*}" = "$rel" ] && src=${p#*=}
	done
	built=$(SLURM_SOURCE=$src "$top/cgo/build.sh" "$work/plugins/$rel" "$inc")
	printf '%s\n' "$built" | grep '^job records' >&2 || true
	log=$(printf '%s\n' "$built" | tail -1)
	case $log in
	*" for Slurm $rel."*) ;;
	*) echo "$0: $inc holds other headers than Slurm $rel's: $log" >&2; exit 1 ;;
	esac
	set -- "$@" -plugins "$rel=$work/plugins/$rel"
done

# The module downloads nFPM through the Go module proxy the first time.
go -C "$here/nfpm" run . -top "$top" -bin "$bin" -gen "$work/gen" \
	-version "$version" -out "$out" -formats "${FORMATS:-deb,rpm}" "$@"
