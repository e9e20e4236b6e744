#!/bin/bash
# Submit throughput of slurmctld with no job_submit plugin, with job_submit/gpumem, and
# with job_submit/lua doing the same rewrite (slurm-conf/job_submit.lab.lua), in one run.
# The submitter (submit.c) calls libslurm from PROCS processes so that slurmctld is the
# bottleneck; sbatch's own start-up would hide any plugin's cost.
#
#   test/bench/submit.sh [ROUNDS] [PROCS] [JOBS_PER_PROC]     (LAB_SLURM=RELEASE, the host's by default)
#
# Like with like: gpumem and lua get --gres=gpu:mem:20g and rewrite it to shard:20;
# "none" gets shard:20 itself, so all three end as the same native job and the controller
# does the same work after the plugin. "passthru" is gpumem with jobs that ask for
# shard:20 directly: what the plugin costs the jobs it leaves alone.
#
# It runs its own slurmctld (submit-ctld.sh: private config, port 7817, state on tmpfs, no
# slurmd, jobs held), never the lab's, and stops it at the end. Modes are interleaved
# round by round from a fresh slurmctld each, in a rotating order, so drift hits all
# alike. Two figures per mode, medians over rounds: the wall-clock rate, which moves with
# everyone else's load on a shared machine, and slurmctld's own CPU per job (user +
# system from /proc), which moves less; the ratios the target is about are given for both.
# BENCH_CALLGRIND=1 also counts slurmctld's instructions per job under valgrind (one
# round, slow, and blind to the kernel time that thread switches cost).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=${1:-5} PROCS=${2:-8} PER=${3:-500}
REL=${LAB_SLURM:-$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names --host)}
BENCH=${BENCH_DIR:-/tmp/gpumem-bench-$REL}
[ "$(id -u)" -eq 0 ] || {
	echo "bench: run as root (it starts slurmctld and munged and mounts a tmpfs)" >&2
	exit 1
}
# The release's row of the release table (internal/slurmrel/releases.txt), or its refusal.
eval "$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release shell "$REL")"
prefix="gres:"
[[ " $SLURM_GATES " == *" tres-gres-slash "* ]] && prefix="gres/"
# shellcheck source=test/bench/submit-ctld.sh
. "$REPO/test/bench/submit-ctld.sh"
trap bench_teardown EXIT
bench_setup
submitter=$(bench_submitter)

modes=(none gpumem lua passthru)
declare -A rates cpus
ticks() { awk '{print $14 + $15}' "/proc/$(bench_ctld_pid)/stat"; }
mode_tres() { case $1 in none | passthru) echo "${prefix}shard:20" ;; *) echo "${prefix}gpu:mem:20g" ;; esac }
mode_plugin() { case $1 in passthru) echo gpumem ;; *) echo "$1" ;; esac }

for r in $(seq "$ROUNDS"); do
	# Each round starts with a different mode, so no mode always runs first or last.
	k=$(((r - 1) % ${#modes[@]}))
	for m in "${modes[@]:k}" "${modes[@]:0:k}"; do
		bench_ctld_up "$(mode_plugin "$m")"
		tres=$(mode_tres "$m")
		# A short warm-up: the first connections, Lua's state, gpumem's first decision.
		bench_in "$submitter" 2 50 "$tres" >/dev/null
		before=$(ticks)
		out=$(bench_in "$submitter" "$PROCS" "$PER" "$tres")
		cpu=$(awk -v a="$before" -v b="$(ticks)" -v hz="$(getconf CLK_TCK)" -v n=$((PROCS * PER)) \
			'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / n}')
		echo "round $r $m: $out ctld_cpu_us_per_job=$cpu"
		case "$out" in *" failed=0 "*) ;; *) bench_die "$m refused jobs; see $BROOT$B/log/slurmctld.log" ;; esac
		got=$(bench_in squeue -h -t pending -o %b | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')
		[ "$got" = "${prefix}shard:20x$((PROCS * PER + 100)) " ] || bench_die "$m: the jobs hold $got; want all ${prefix}shard:20"
		rates[$m]+="${out##*rate=} "
		cpus[$m]+="$cpu "
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${rates[none]}" | median)
cbase=$(echo "${cpus[none]}" | median)
echo "submit throughput, Slurm $REL, $PROCS processes x $PER jobs, median of $ROUNDS rounds:"
echo "  mode       jobs/s  vs none   slurmctld CPU us/job  vs none  (capacity: none CPU / mode CPU)"
# A smoke run's few jobs may cost slurmctld no whole clock tick: a ratio to 0 reads 0%.
for m in "${modes[@]}"; do
	v=$(echo "${rates[$m]}" | median)
	c=$(echo "${cpus[$m]}" | median)
	awk -v m="$m" -v v="$v" -v b="$base" -v c="$c" -v cb="$cbase" \
		'BEGIN {printf "  %-9s %7.1f  %6.1f%%   %18.1f  %6.1f%%\n", m, v, (b > 0 ? 100 * v / b : 0), c, (c > 0 ? 100 * cb / c : 0)}'
done

[ "${BENCH_CALLGRIND:-0}" = 1 ] || exit 0
echo "slurmctld instructions per job (callgrind, ${BENCH_CALLGRIND_JOBS:-1000} jobs from 8 processes after a warm-up):"
declare -A irs
for m in "${modes[@]}"; do
	irs[$m]=$(bench_callgrind "$(mode_plugin "$m")" "$submitter" "$(mode_tres "$m")")
done
for m in "${modes[@]}"; do
	awk -v m="$m" -v i="${irs[$m]}" -v b="${irs[none]}" \
		'BEGIN {printf "  %-9s %10.0f  %6.1f%% of none (capacity %5.1f%%)\n", m, i, 100 * i / b, 100 * b / i}'
done
