#!/bin/bash
# Soak benchmark of the gpumemd poll loop: a fake node of 8 GPUs with running jobs, 1 s
# polling, history on, for MINUTES minutes (default 10). Prints the sidecar's CPU use
# (percent of one core) and its peak resident memory, with the commands that measured
# them. Targets: <= 1% of one core, <= 40 MB RSS.
#
#   test/bench/gpumemd.sh [MINUTES]
#   BENCH_SECONDS=3 test/bench/gpumemd.sh     (a window of seconds: the smoke run)
set -euo pipefail

minutes=${1:-10}
case $minutes in '' | *[!0-9]*) echo "usage: $0 [MINUTES] (a whole number of minutes, default 10)" >&2; exit 2 ;; esac
seconds=${BENCH_SECONDS:-$((minutes * 60))}
case $seconds in '' | *[!0-9]* | 0) echo "$0: BENCH_SECONDS=$seconds: want a whole number of seconds" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/gpumemd-bench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -trimpath -o "$work/gpumemd" ./cmd/gpumemd)

# Four jobs with real processes, two on shared GPUs, one over its slice (recorded only).
start_job() { # JOBID SHARDS; its PID is appended to pids
	env -i SLURM_JOB_ID="$1" SLURM_SHARDS_ON_NODE="$2" sleep $((seconds + 120)) </dev/null >/dev/null 2>&1 &
	pids+=($!)
}
start_job 1001 20
start_job 1002 10
start_job 1003 40
start_job 1004 5
p1=${pids[0]} p2=${pids[1]} p3=${pids[2]} p4=${pids[3]}
gpus=""
for i in 0 1 2 3 4 5 6 7; do
	procs=""
	case $i in
	0) procs="{\"pid\": $p1, \"used_mib\": 18432}, {\"pid\": $p2, \"used_mib\": 12288}" ;;
	3) procs="{\"pid\": $p3, \"used_mib\": 30720}" ;;
	5) procs="{\"pid\": $p4, \"used_mib\": 4096}" ;;
	esac
	gpus+="${gpus:+,}{\"model\": \"h100-80gb\", \"temperature_c\": $((35 + i)), \"power_mw\": 250000, \"utilization_gpu\": 40, \"processes\": [${procs}]}"
done
echo "{\"gpus\": [${gpus}]}" >"$work/node.json"

port=$((20000 + RANDOM % 20000))
"$work/gpumemd" --config /dev/null --node bench1 --nvml "fake:$work/node.json" \
	--listen "127.0.0.1:$port" --poll-interval 1s --history-db "$work/history.db" \
	--history-bucket 10s --health-state "$work/health.json" 2>"$work/gpumemd.log" &
daemon=$!
pids+=("$daemon")
sleep 5 # start-up (first poll, SQLite schema) is not the steady state being measured

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$daemon/stat"; }
c0=$(cpu_ticks)
t0=$(date +%s.%N)
sleep "$seconds"
c1=$(cpu_ticks)
t1=$(date +%s.%N)
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$daemon/status")
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$daemon/status")
polls=$(curl -fsS "http://127.0.0.1:$port/metrics" | awk '/^gpumem_sidecar_polls_total/ {print $2}')
errors=$(curl -fsS "http://127.0.0.1:$port/metrics" | awk '/^gpumem_sidecar_poll_errors_total/ {s += $2} END {print s + 0}')
# No job yet is no error (a short window may end before the first history bucket).
jobs=$(curl -fsS "http://127.0.0.1:$port/api/jobs" | { grep -o '"job_id"' || true; } | wc -l)

[ "${polls:-0}" -gt 0 ] || { echo "gpumemd soak: no polls counted; see the log:" >&2; cat "$work/gpumemd.log" >&2; exit 1; }
echo "gpumemd soak: 8 fake H100s, 4 jobs, 1 s polling, history on, $((seconds / 60)) min $((seconds % 60)) s"
echo "polls: ${polls}, poll errors: ${errors}, jobs in history: ${jobs}"
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" \
	'BEGIN {printf "CPU: %.3f%% of one core  (utime+stime from /proc/PID/stat fields 14+15: %d ticks at %d Hz over %.1f s)\n", 100 * (c1 - c0) / hz / (t1 - t0), c1 - c0, hz, t1 - t0}'
awk -v h="$hwm" -v r="$rss" 'BEGIN {printf "RSS: max %.1f MB, now %.1f MB  (VmHWM, VmRSS from /proc/PID/status)\n", h / 1024, r / 1024}'
