#!/bin/bash
# The driver fence on a machine with a real NVIDIA GPU (docs/gpumemd.md, "The driver
# fence"): does a hard limit set through gpumem's own code (internal/fence, driven by
# test/gpu/fencecheck) make the driver refuse an allocation past it?
#
#   test/gpu/fence.sh [LIMIT_MIB [MAX_MIB]]        (as root; default 4096 and 8192)
#
# It records the driver, kernel and cgroup2 controllers; builds test/gpu/alloc.c, which
# dlopens libcuda.so.1 and allocates STEP MiB at a time on device 0; makes one cgroup of
# its own below the cgroup2 root; and runs alloc in it three times: without a limit, with
# a hard limit of LIMIT_MIB set by fence.Apply, and after fence.Clear. It prints PASS when
# the limited run stops at the limit and both others reach MAX_MIB, UNSUPPORTED (exit 3)
# when NVML or the kernel refuse the limit (the answer is printed: gpumemd then counts
# the GPU's fence as none and falls back to its measurement and kill), FAIL otherwise.
#
# It changes nothing device-wide: no MIG mode, clock or reset. The only limit it sets is
# on its own cgroup, for the process it starts; it clears it and removes the cgroup
# before it exits, and where it had to enable the dmem controller in the root's
# cgroup.subtree_control it disables it again.
#
# The machine may have no network: FENCECHECK=path, or bin/fencecheck, or an offline build.
set -u
cd "$(dirname "$0")/../.." || exit 2
LIMIT=${1:-4096}
MAX=${2:-8192}
STEP=${STEP:-256}
[ "$(id -u)" -eq 0 ] || { echo "run as root: only root sets a GPU memory limit" >&2; exit 2; }
[ "$LIMIT" -lt "$MAX" ] || { echo "LIMIT_MIB ($LIMIT) must be below MAX_MIB ($MAX)" >&2; exit 2; }
say() { printf '== %s\n' "$*"; }

say "machine"
date -u +%FT%TZ
uname -r
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,mig.mode.current,compute_mode --format=csv
ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$ROOT" ] || { echo "UNSUPPORTED: no cgroup2 hierarchy is mounted; the driver fence needs one"; exit 3; }
echo "cgroup2 at $ROOT; controllers: $(cat "$ROOT/cgroup.controllers"); subtree_control: $(cat "$ROOT/cgroup.subtree_control")"

WORK=$(mktemp -d)
CG=$ROOT/gpumem-fence-check.$$
FC=${FENCECHECK:-}
enabled_dmem=0
cleanup() {
	if [ -d "$CG" ]; then
		[ -n "$FC" ] && "$FC" -cgroup "$CG" clear >/dev/null 2>&1
		# Whatever is left in it (nothing, normally) goes back to the root first.
		while read -r pid; do echo "$pid" >"$ROOT/cgroup.procs"; done <"$CG/cgroup.procs" 2>/dev/null
		rmdir "$CG" && echo "removed $CG"
	fi
	[ "$enabled_dmem" = 1 ] && echo "-dmem" >"$ROOT/cgroup.subtree_control" && echo "disabled dmem in $ROOT/cgroup.subtree_control again"
	rm -rf "$WORK"
}
trap cleanup EXIT

if [ -z "$FC" ] && [ -x bin/fencecheck ]; then FC=bin/fencecheck; fi
if [ -z "$FC" ]; then
	command -v go >/dev/null || { echo "no fencecheck (FENCECHECK= or bin/fencecheck) and no Go to build one" >&2; exit 2; }
	mod=mod
	[ -d vendor ] && mod=vendor
	GOFLAGS="-mod=$mod -buildvcs=false" GOPROXY=off CGO_ENABLED=1 go build -o "$WORK/fencecheck" ./test/gpu/fencecheck || exit 2
	FC=$WORK/fencecheck
fi
cc -O2 -o "$WORK/alloc" test/gpu/alloc.c -ldl || exit 2

# The limit is the dmem controller's in the cgroup NVML is given; NVML needs it enabled
# for the cgroup's children where the kernel has it.
if grep -qw dmem "$ROOT/cgroup.controllers" && ! grep -qw dmem "$ROOT/cgroup.subtree_control"; then
	echo "+dmem" >"$ROOT/cgroup.subtree_control" && enabled_dmem=1 && echo "enabled dmem in $ROOT/cgroup.subtree_control for this check"
fi
mkdir "$CG" || exit 2
echo "cgroup $CG; controllers: $(cat "$CG/cgroup.controllers")"

# in_cg runs alloc inside the check's cgroup and prints what it reached.
in_cg() {
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3" "$4"' sh "$CG" "$WORK/alloc" "$STEP" "$MAX" >"$WORK/alloc.out" 2>&1
	local rc=$?
	tail -1 "$WORK/alloc.out"
	[ $rc -eq 0 ] || { cat "$WORK/alloc.out"; exit 2; }
	sed -n 's/^reached=\([0-9]*\) .*/\1/p' "$WORK/alloc.out" | tail -1 >"$WORK/reached"
}

say "what gpumemd would find (fence.Detect on this cgroup)"
"$FC" -cgroup "$CG" detect

say "1. no limit"
in_cg
free=$(cat "$WORK/reached")

say "2. hard limit $LIMIT MiB through fence.Apply"
if ! "$FC" -cgroup "$CG" -mib "$LIMIT" set; then
	"$FC" -cgroup "$CG" get
	echo "UNSUPPORTED: NVML or the kernel refused the limit (above). gpumemd counts this GPU's fence as none; the measurement and kill hold the slice."
	exit 3
fi
"$FC" -cgroup "$CG" get
in_cg
limited=$(cat "$WORK/reached")
"$FC" -cgroup "$CG" get

say "3. after fence.Clear"
"$FC" -cgroup "$CG" clear
"$FC" -cgroup "$CG" get
in_cg
cleared=$(cat "$WORK/reached")

say "result: no limit $free MiB, limited $limited MiB (limit $LIMIT), cleared $cleared MiB (of $MAX)"
if [ "$free" -eq "$MAX" ] && [ "$cleared" -eq "$MAX" ] && [ "$limited" -le "$LIMIT" ] && [ "$limited" -ge $((LIMIT - 2 * STEP - 1024)) ]; then
	echo "PASS: the driver refused allocation past the limit gpumem set, and only while it was set"
	exit 0
fi
echo "FAIL: the allocations above do not show the limit holding (or something else held memory)"
exit 1
