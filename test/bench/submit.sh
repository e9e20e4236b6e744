#!/bin/bash
# Submit throughput of slurmctld with no job_submit plugin, with job_submit/gpumem, and
# with job_submit/lua doing the same rewrite (slurm-conf/job_submit.lab.lua), in one run.
# The submitter (submit.c) calls libslurm from PROCS processes so that slurmctld is the
# bottleneck; sbatch's own start-up would hide any plugin's cost.
#
#   test/bench/submit.sh [ROUNDS] [PROCS] [JOBS_PER_PROC]     (LAB_SLURM=22.05|24.11)
#
# Modes are interleaved round by round and each round starts from a fresh slurmctld, so
# drift (other load on the machine, job-table growth) hits all three alike; the median
# round of each mode is reported. Leaves the lab up with the gpumem plugin.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=${1:-5} PROCS=${2:-8} PER=${3:-500}
REL=${LAB_SLURM:-22.05}
LAB=$REPO/test/lab/lab.sh

prefix="gres:"
[ "$REL" != 22.05 ] && prefix="gres/"

root=""
[ "$REL" = 24.11 ] && root=${LAB_CHROOT_CACHE:-/var/cache/gpumem-lab}/trixie
modes=(none gpumem lua)
if [ ! -f "$REPO/bin/job_submit_gpumem.so" ] && [ "$REL" = 22.05 ]; then
	echo "bench: bin/job_submit_gpumem.so is not built (make build); measuring none and lua only" >&2
	modes=(none lua)
fi
"$LAB" up >/dev/null
submitter=$("$LAB" submitter)

declare -A rates cpus
# ctld_ticks is slurmctld's CPU time so far (user + system, clock ticks). On a shared
# machine the wall-clock rate moves with everyone else's load; the controller's own CPU
# per job does not, so the ratios are reported from both.
ctld_ticks() {
	local pid
	pid=$(cat "$root/var/lib/gpumem-lab/$REL/run/slurmctld.pid")
	awk '{print $14 + $15}' "/proc/$pid/stat"
}
for r in $(seq "$ROUNDS"); do
	for m in "${modes[@]}"; do
		LAB_JOB_SUBMIT=$m LAB_CLI_FILTER=none "$LAB" up >/dev/null
		tres="${prefix}gpu:mem:20g"
		[ "$m" = none ] && tres="${prefix}shard:20"
		# A short warm-up: the Go runtime's first call and Lua's state creation.
		"$LAB" run "$submitter" 2 50 "$tres" >/dev/null
		before=$(ctld_ticks)
		out=$("$LAB" run "$submitter" "$PROCS" "$PER" "$tres")
		cpu=$(awk -v a="$before" -v b="$(ctld_ticks)" -v hz="$(getconf CLK_TCK)" -v n=$((PROCS * PER)) \
			'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / n}')
		echo "round $r $m: $out ctld_cpu_us_per_job=$cpu"
		case "$out" in *" failed=0 "*) ;; *)
			echo "bench: $m refused jobs; see the lab's slurmctld.log" >&2
			exit 1
			;;
		esac
		rates[$m]+="${out##*rate=} "
		cpus[$m]+="$cpu "
	done
done
LAB_JOB_SUBMIT=gpumem "$LAB" up >/dev/null

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${rates[none]}" | median)
cbase=$(echo "${cpus[none]}" | median)
echo "submit throughput, Slurm $REL, $PROCS processes x $PER jobs, median of $ROUNDS rounds:"
echo "  mode     jobs/s  vs none   slurmctld CPU us/job  capacity vs none"
for m in "${modes[@]}"; do
	v=$(echo "${rates[$m]}" | median)
	c=$(echo "${cpus[$m]}" | median)
	awk -v m="$m" -v v="$v" -v b="$base" -v c="$c" -v cb="$cbase" \
		'BEGIN {printf "  %-7s %7.1f  %6.1f%%   %18.1f  %14.1f%%\n", m, v, 100 * v / b, c, 100 * cb / c}'
done
