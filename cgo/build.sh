#!/bin/sh
# Build job_submit_gpumem.so, cli_filter_gpumem.so and spank_gpumem.so (the driver
# fence's hook where no Prolog runs in the job's cgroup) for one Slurm release.
#
#   cgo/build.sh OUTDIR [SLURM_INCLUDE_DIR]
#
# SLURM_INCLUDE_DIR holds slurm/slurm.h of the Slurm the plugins will be loaded by
# (default /usr/include, from libslurm-dev): Slurm loads a plugin only when its
# plugin_version equals the running release exactly, so build once per release. Only its
# slurm/ folder is used, so headers from another distribution's tree (a chroot's
# CHROOT/usr/include) never replace this machine's C library headers.
#
# SLURM_SOURCE (optional) is a source tree of that same release (a SchedMD tag, or the
# distribution's source package): job_submit_gpumem.so then reads the job a
# `scontrol update` changes at the offsets its own slurmctld headers give, measured now
# (cgo/jobrec-offsets.sh --one). Without it the table in cgo/include/gpumem_jobrec.h is
# used; a release it lacks has no layout, and a new gpu:mem for a pending job is refused
# with what to do instead.
set -eu

usage() { echo "usage: $0 OUTDIR [SLURM_INCLUDE_DIR]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
out=$1
inc=${2:-/usr/include}
if [ ! -f "$inc/slurm/slurm.h" ] || [ ! -f "$inc/slurm/slurm_version.h" ]; then
	echo "$0: no slurm/slurm.h and slurm/slurm_version.h under $inc; install libslurm-dev or give the include folder of the Slurm to build for" >&2
	exit 1
fi

here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
hdr=$(mktemp -d)
trap 'rm -rf "$hdr"' EXIT
ln -s "$(cd "$inc" && pwd)/slurm" "$hdr/slurm"

n=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$inc/slurm/slurm_version.h")
version=$(printf '%d.%02d.%d' $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)))
# A release the table (internal/slurmrel/releases.txt) lacks has no stated gates: stop
# and name it rather than guess.
(cd "$here/.." && CGO_ENABLED=0 go run ./cmd/slurm-release shell "$version" >/dev/null) || exit 1
ldflags=$("$here/../packaging/version.sh" --ldflags)
# Go's build cache does not see headers outside a package's folder: name the shared
# headers' contents in the flags (which it does see), or a changed struct gpumem_job could
# link a stale half against a new one.
local=""
if [ -n "${SLURM_SOURCE:-}" ]; then
	"$here/jobrec-offsets.sh" --one "$SLURM_SOURCE" >"$hdr/gpumem_jobrec_local.h"
	src=$(sed -n 's/.*SLURM_VERSION_NUM(\([0-9]*\), \([0-9]*\), \([0-9]*\)).*/\1 \2 \3/p' "$hdr/gpumem_jobrec_local.h")
	src=$(printf '%d.%02d.%d' $src)
	if [ "$src" != "$version" ]; then
		echo "$0: SLURM_SOURCE $SLURM_SOURCE is Slurm $src, the headers in $inc are Slurm $version: give the source tree of the release the plugins are built for" >&2
		exit 1
	fi
	local=-DGPUMEM_JOBREC_LOCAL
fi
sum=$(cat "$here"/include/*.h "$hdr"/*.h 2>/dev/null | sha256sum | cut -c1-16)
# Where scontrol update of a pending job can read the job (say it: an admin building for
# a release the table lacks should know before users find out).
if [ -n "$local" ]; then
	records="read at offsets measured from $SLURM_SOURCE"
elif printf '#include <slurm/slurm.h>\n#include "gpumem_jobrec.h"\n#if !GPUMEM_JOBREC_LAYOUT\n#error\n#endif\n' >"$hdr/probe.c" &&
	# A file, not stdin: zig cc (packaging/zig-cc) compiles no C from a pipe.
	${CC:-cc} -c -o "$hdr/probe.o" -Wno-deprecated-declarations -I"$hdr" -I"$here/include" "$hdr/probe.c" 2>/dev/null; then
	records="read at offsets in cgo/include/gpumem_jobrec.h"
else
	records="not known to this build: a new gpu:mem for a pending job is refused (set SLURM_SOURCE to read them)"
fi
cd "$here/.."
for p in jobsubmit:job_submit_gpumem clifilter:cli_filter_gpumem; do
	pkg=${p%%:*} so=${p#*:}.so
	CGO_ENABLED=1 CGO_CFLAGS="-O2 -Wno-deprecated-declarations -I$hdr $local -DGPUMEM_HEADERS_SUM=$sum" go build -trimpath -ldflags "$ldflags" -buildmode=c-shared -o "$out/$so" "./cgo/$pkg"
	rm -f "$out/${so%.so}.h"
	echo "built $out/$so for Slurm $version"
done
echo "job records for scontrol update on Slurm $version: $records"
# The SPANK plugin is plain C (it only runs gpumemd): no Go runtime inside slurmstepd.
${CC:-cc} -shared -fPIC -O2 -Wall -Werror -Wno-deprecated-declarations -I"$hdr" -o "$out/spank_gpumem.so" "$here/spank/spank_gpumem.c"
echo "built $out/spank_gpumem.so for Slurm $version"
