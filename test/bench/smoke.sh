#!/bin/bash
# Smoke run of every benchmark script in test/bench at the smallest size that still goes
# through its whole path, seconds each, so that a change which breaks a benchmark fails
# CI (make bench-smoke, part of make test) instead of waiting for the next measurement.
# The figures it prints mean nothing at these sizes. One line per script with its time;
# a script that fails is named, with the tail of its output, and the run exits 1. A
# script in test/bench with no smoke run here fails the run too.
#
#   test/bench/smoke.sh        (as root for submit.sh, which starts its own slurmctld on
#                               port 7817 for LAB_SLURM, default 22.05; no lab needed)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"

# smoke_cmd prints the smoke run of test/bench/$1, or "sourced" for a library that
# another script's run covers.
smoke_cmd() {
	case $1 in
	submit.sh) echo "test/bench/submit.sh 1 1 5" ;;
	submit-ctld.sh) echo sourced ;; # by submit.sh
	cost-slope.sh) echo "env BENCHTIME=1x test/bench/cost-slope.sh" ;;
	ranges.sh) echo "env BENCHTIME=1x test/bench/ranges.sh" ;;
	plugin.sh) echo "test/bench/plugin.sh 50" ;;
	gpumemd.sh) echo "env BENCH_SECONDS=2 test/bench/gpumemd.sh" ;;
	smoke.sh) echo sourced ;; # this script
	*) return 1 ;;
	esac
}

logs=$(mktemp -d /tmp/gpumem-bench-smoke.XXXXXX)
trap 'rm -rf "$logs"' EXIT
failed=() start=$(date +%s.%N)
for f in test/bench/*.sh; do
	name=${f##*/}
	if ! cmd=$(smoke_cmd "$name"); then
		echo "bench-smoke: FAIL $name: no smoke run for it in test/bench/smoke.sh" >&2
		failed+=("$name")
		continue
	fi
	[ "$cmd" = sourced ] && continue
	if [ "$name" = submit.sh ] && [ "$(id -u)" -ne 0 ]; then
		echo "bench-smoke: SKIP $name: needs root (it starts slurmctld and munged)" >&2
		continue
	fi
	t0=$(date +%s.%N) rc=0
	$cmd >"$logs/$name.log" 2>&1 || rc=$?
	t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
	if [ "$rc" -eq 0 ]; then
		printf 'bench-smoke: ok   %-14s %6s s  (%s)\n' "$name" "$t" "$cmd"
	else
		printf 'bench-smoke: FAIL %-14s %6s s  (%s: exit %d); its last lines:\n' "$name" "$t" "$cmd" "$rc" >&2
		tail -n 25 "$logs/$name.log" | sed 's/^/  | /' >&2
		failed+=("$name")
	fi
done
t=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
if [ ${#failed[@]} -gt 0 ]; then
	echo "bench-smoke: FAILED after $t s: ${failed[*]}" >&2
	exit 1
fi
echo "bench-smoke: all benchmark scripts ran in $t s"
