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
ldflags=$("$here/../packaging/version.sh" --ldflags)
# Go's build cache does not see headers outside a package's folder: name the shared
# headers' contents in the flags (which it does see), or a changed struct gpumem_job could
# link a stale half against a new one.
sum=$(cat "$here"/include/*.h | sha256sum | cut -c1-16)
cd "$here/.."
for p in jobsubmit:job_submit_gpumem clifilter:cli_filter_gpumem; do
	pkg=${p%%:*} so=${p#*:}.so
	CGO_ENABLED=1 CGO_CFLAGS="-O2 -Wno-deprecated-declarations -I$hdr -DGPUMEM_HEADERS_SUM=$sum" go build -trimpath -ldflags "$ldflags" -buildmode=c-shared -o "$out/$so" "./cgo/$pkg"
	rm -f "$out/${so%.so}.h"
	echo "built $out/$so for Slurm $version"
done
# The SPANK plugin is plain C (it only runs gpumemd): no Go runtime inside slurmstepd.
${CC:-cc} -shared -fPIC -O2 -Wall -Werror -Wno-deprecated-declarations -I"$hdr" -o "$out/spank_gpumem.so" "$here/spank/spank_gpumem.c"
echo "built $out/spank_gpumem.so for Slurm $version"
