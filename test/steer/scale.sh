#!/bin/bash
# Steering at cluster scale, with arrivals and departures: the same trace-drawn job
# stream submitted twice to a lab of many nodes (LAB_SCALE, mixed H100, A100 and L4,
# typed shards), once as Slurm places it (native: no snapshot, nothing pinned) and once
# with `gpumemctl steer --snapshot` running beside it, so that job_submit pins each job
# to the GPU the gpumem policy picks (pinned). Jobs end on their own and queue when
# nothing fits, FIFO with backfill as the lab's Slurm schedules.
#
#   test/steer/scale.sh [SEEDS] [NODES] [JOBS]     # default "42 43 44" 64 600
#
# Per run it reports jobs started by the horizon (the last arrival plus HORIZON seconds)
# and those still pending then, mean and p95 queue wait of the started jobs (Slurm's
# own submit and start times, from accounting), GPU allocation (shard-seconds held
# within the window over capacity-seconds; and the same from WARM seconds after the first
# arrival, once the cluster has filled: the fill from empty and the submitter's lag weigh
# on the whole window's figure, alike in both modes or not), shards stranded (mean over samples of
# `gpumemctl steer report`: free shards on GPUs where no size of the stream fits), and
# per seed the paired difference pinned − native, with the mean and standard error over
# seeds at the end.
#
# The stream, per seed (internal/sim's DrawStream, through test/steer/stream): JOBS
# single-GPU tasks of the trace's default workload, drawn with replacement; a task's GPU
# share becomes that share of a REF GiB GPU, rounded up (1 GiB shards), its run time the
# trace's (deletion − scheduled) over TSCALE, kept within DMIN..DMAX seconds; a share
# LARGE of the jobs ask instead a large slice, LARGE_MIN..LARGE_MAX GiB; Poisson
# arrivals at the rate that offers LOAD times the lab's shards (rate = LOAD × capacity /
# (mean shards × mean run time)). Waits are also split by size: jobs over half the
# stream's largest request, and the others. The simulator replays each run's arrivals as
# Slurm received them (sim-run-native: first fit; sim-run-pinned: the lab's pinning,
# sim.PinModel), and after each seed's two runs the stream as drawn (first fit, gpumem
# for every start, at-submit, the lab's pinning), on the same GPUs, scored over the same
# window (sim.MeasureStream).
#
# Environment: LOAD (1.2), REF (24), TSCALE (30), DMIN (5), DMAX (120), LARGE (0),
# LARGE_MIN (12), LARGE_MAX (40), HORIZON (60), WARM (60),
# INTERVAL (steer's, 2s), UNPIN (its --unpin-after, 20s), SIM_SLURM (empty; a duration
# such as 1s: the replays also schedule as Slurm does, backfill that often, as slurm-*
# lines, and the as-run replays use it; 6-9 s a replay at 600 jobs), SUBMITTERS (sbatch run at
# once, 4: one at a time falls behind twice the load's arrivals on two cores), RESULTS (a TSV of every run's
# figures, for test/e2e), SCALE_LOGS (a folder to keep each run's stream, accounting,
# samples, steer log and sdiag in), LAB_SLURM (24.11; 26.05 also has typed shards). It brings the
# lab up (LAB_SCALE=NODES LAB_SHARD_TYPES=per-gpu) unless one of NODES nodes is up, and
# leaves it as it found it: down, or the plain lab up again. Needs root, jq, make build,
# and the trace folder: $GPUMEM_TRACE_DIR or ../shared/data beside the repository, else
# it draws from the repository's synthetic sample (internal/trace/testdata/sample), as CI
# does.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SEEDS=${1:-42 43 44}
NODES=${2:-64}
JOBS=${3:-600}
LOAD=${LOAD:-1.2} REF=${REF:-24} TSCALE=${TSCALE:-30} DMIN=${DMIN:-5} DMAX=${DMAX:-120}
LARGE=${LARGE:-0} LARGE_MIN=${LARGE_MIN:-12} LARGE_MAX=${LARGE_MAX:-40}
HORIZON=${HORIZON:-60} WARM=${WARM:-60} INTERVAL=${INTERVAL:-2s} UNPIN=${UNPIN:-20s} SUBMITTERS=${SUBMITTERS:-4}
SIM_SLURM=${SIM_SLURM:-}
typed=$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names --gate typed-shards)
export LAB_SLURM=${LAB_SLURM:-$(echo "$typed" | head -1)}
if ! echo "$typed" | grep -qx "$LAB_SLURM"; then
	echo "scale: LAB_SLURM=$LAB_SLURM: pinning needs typed shards, which $(echo $typed) have (docs/steering.md)" >&2
	exit 2
fi
ROOT=$("$REPO/test/lab/lab.sh" where | sed -n 's/^root=//p')
TRACE=${GPUMEM_TRACE_DIR:-$REPO/../shared/data/alibaba-gpu-v2023}
# Without the trace (a clean clone, CI), the repository's synthetic sample in the same
# columns (internal/trace/testdata/sample): its figures are not the trace's.
if [ -z "${GPUMEM_TRACE_DIR:-}" ] && [ ! -r "$TRACE/openb_pod_list_default.csv" ]; then
	TRACE=$REPO/internal/trace/testdata/sample
	echo "scale: no trace beside the repository; the stream is drawn from the synthetic sample in $TRACE" >&2
fi
PODS=$TRACE/openb_pod_list_default.csv
LAB=/var/lib/gpumem-lab/$LAB_SLURM # as the lab sees it
BIN=$LAB/bin/gpumemctl
SNAP=$LAB/usage.json # the lab's gpumem.conf UsageSnapshot
WORK=$(mktemp -d)

die() {
	echo "scale: $*" >&2
	exit 1
}
in_lab() { chroot "$ROOT" "$@"; }

[ "$(id -u)" -eq 0 ] || die "the lab starts Slurm daemons: run as root"
[ -r "$PODS" ] || die "no trace at $PODS; get https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023 (its csv folder) and set GPUMEM_TRACE_DIR to it"
command -v jq >/dev/null || die "needs jq"
for v in NODES JOBS HORIZON WARM TSCALE DMIN DMAX SUBMITTERS; do
	case ${!v} in '' | *[!0-9]*) die "$v=${!v}: want a whole number" ;; esac
done
[ "$JOBS" -ge 1 ] && [ "$TSCALE" -ge 1 ] && [ "$SUBMITTERS" -ge 1 ] || die "JOBS, TSCALE and SUBMITTERS must be at least 1"

# One lab of this release at a time, as test/e2e.sh and test/matrix/run.sh take it.
exec 9>"/tmp/gpumem-lab-$LAB_SLURM.lock"
flock -n 9 || die "another run holds the $LAB_SLURM lab (/tmp/gpumem-lab-$LAB_SLURM.lock)"

started_lab=0
was_up=0
"$REPO/test/lab/lab.sh" status >/dev/null 2>&1 && was_up=1
steer_pid=
sampler_pid=
cleanup() {
	[ -n "$steer_pid" ] && kill "$steer_pid" 2>/dev/null
	[ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null
	if [ "$started_lab" = 1 ] && [ "$was_up" = 1 ]; then
		# Left as found, as test/e2e.sh leaves a lab: it was up plain, it is again.
		"$REPO/test/lab/lab.sh" up >/dev/null 2>&1 || echo "scale: the $LAB_SLURM lab that was up did not start again" >&2
	elif [ "$started_lab" = 1 ]; then
		"$REPO/test/lab/lab.sh" down >/dev/null 2>&1 || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$(in_lab sinfo -h -N -o %N 2>/dev/null | sort -u | grep -c '^s[0-9]')" != "$NODES" ] ||
	! grep -qi '^ShardTypes = per-gpu' "$ROOT/etc/slurm/gpumem.conf" 2>/dev/null; then
	LAB_SCALE=$NODES LAB_SHARD_TYPES=per-gpu "$REPO/test/lab/lab.sh" up >"$WORK/up.log" 2>&1 ||
		die "the $NODES-node lab did not start: $(tail -5 "$WORK/up.log")"
	started_lab=1
fi

# Shard capacity and the nodes, from the lab's own report (kept for the replays).
(cd "$REPO" && go build -o "$WORK/streamtool" ./test/steer/stream) || die "cannot build test/steer/stream"
in_lab "$BIN" steer report -o json >"$WORK/gpus.json"
read -r CAPACITY GPUS < <(jq -r '[([.gpus[] | .used + .free] | add), (.gpus | length)] | @tsv' "$WORK/gpus.json")
echo "lab: $NODES nodes, $GPUS GPUs, $CAPACITY shards (Slurm $LAB_SLURM); $JOBS jobs a run at load $LOAD"

# stream SEED prints "offset shards seconds" a job, offsets in seconds from the start
# (internal/sim's DrawStream, the same stream the simulator replays below).
stream() {
	"$WORK/streamtool" draw -pods "$PODS" -seed "$1" -jobs "$JOBS" -capacity "$CAPACITY" -load "$LOAD" -ref "$REF" \
		-tscale "$TSCALE" -dmin "$DMIN" -dmax "$DMAX" -large "$LARGE" -large-min "$LARGE_MIN" -large-max "$LARGE_MAX"
}

reset() {
	in_lab scancel --quiet -u root >/dev/null 2>&1 || true
	for _ in $(seq 300); do
		[ -z "$(in_lab squeue -h -o %i)" ] && break
		sleep 0.2
	done
	[ -z "$(in_lab squeue -h -o %i)" ] || die "the lab's queue did not empty"
	in_lab scontrol update nodename="s[1-$NODES]" weight=1
	rm -f "$ROOT$SNAP"
	# job_submit keeps the snapshot it read until its next look (gpumem.conf's
	# ReloadInterval, 2 s in the lab), and pins by it while it is fresh: a native run
	# started at once would have its first jobs pinned by the last run's snapshot.
	sleep 3
}

# sample SIZES FILE appends, every two seconds, each job's id, state and GRES request
# ("J id state gres") and the lab's stranded and used shards ("S stranded used").
sample() {
	while :; do
		in_lab squeue -h -o 'J %i %T %b' >>"$2" 2>/dev/null || true
		in_lab "$BIN" steer report -o json --sizes "$1" 2>/dev/null |
			jq -r '"S \(.stranded_shards) \([.gpus[].used] | add)"' >>"$2" 2>/dev/null || true
		sleep 2
	done
}

# submit N D OFF submits a job of N shards that sleeps D seconds, and notes its id, N,
# D and its offset OFF in the stream; a failure is noted in failed.
submit() {
	local id
	if id=$(in_lab sbatch --parsable -J "$name" -o /dev/null --gres="shard:$1" -t "$((($2 + 59) / 60 + 1))" --wrap "sleep $2"); then
		echo "$id $1 $2 $3" >>"$WORK/ids" # one short line: appends of several submitters do not mix
	else
		echo "$3" >>"$WORK/failed"
	fi
}

# run SEED MODE prints the run's figures: started pending wait-mean wait-p95 wait-small
# wait-large alloc% alloc-steady% stranded pinned unpinned lag (the most a job reached
# Slurm after its offset, in Slurm's whole seconds). It leaves in asrun the stream as
# Slurm received it: each job at its offset or at its submission, whichever is later.
run() {
	local seed=$1 mode=$2 name="scale-$1-$2" t0 now off n d end sizes subs=()
	reset
	stream "$seed" >"$WORK/stream"
	awk -v w="$WARM" -v h="$HORIZON" 'END { exit !(w < $1 + h) }' "$WORK/stream" ||
		die "WARM=$WARM leaves nothing of the window: the last arrival is at $(tail -1 "$WORK/stream" | cut -d' ' -f1) s, and HORIZON=$HORIZON; want WARM under their sum"
	sizes=$(awk '{ printf "%s%dG", (NR > 1 ? "," : ""), $2 }' "$WORK/stream")
	: >"$WORK/ids" >"$WORK/samples" >"$WORK/steer.log" >"$WORK/failed" >"$WORK/cadence"
	[ -z "${SCALE_LOGS:-}" ] || in_lab sdiag -r >/dev/null 2>&1 || true
	if [ "$mode" = pinned ]; then
		# chroot itself, not a function's subshell, so that $! is steer's own pid.
		chroot "$ROOT" "$BIN" steer --policy gpumem --sizes "$sizes" --snapshot "$SNAP" --interval "$INTERVAL" \
			--unpin-after "$UNPIN" >"$WORK/steer.log" 2>&1 9>&- &
		steer_pid=$!
		for _ in $(seq 100); do # the first snapshot, and the plugin's ReloadInterval
			[ -s "$ROOT$SNAP" ] && break
			sleep 0.1
		done
		sleep 2
	fi
	sample "$sizes" "$WORK/samples" 9>&- &
	sampler_pid=$!
	t0=$EPOCHREALTIME
	while read -r off n d; do
		now=$(awk -v a="$EPOCHREALTIME" -v b="$t0" -v o="$off" 'BEGIN { printf "%.3f", o - (a - b) }')
		case $now in -*) ;; *) sleep "$now" ;; esac
		# In the background, at most SUBMITTERS at once, the oldest waited for first: a
		# run that falls behind its arrivals offers less than its load (docs/steering.md).
		submit "$n" "$d" "$off" 9>&- &
		subs+=("$!")
		if [ "${#subs[@]}" -ge "$SUBMITTERS" ]; then
			wait "${subs[0]}" || true
			subs=("${subs[@]:1}")
		fi
	done <"$WORK/stream"
	[ "${#subs[@]}" -eq 0 ] || wait "${subs[@]}" || true
	[ -s "$WORK/failed" ] && die "sbatch failed in run $name for $(wc -l <"$WORK/failed") job(s)"
	end=$(awk -v a="$EPOCHREALTIME" -v h="$HORIZON" 'BEGIN { printf "%d", a + h }')
	sleep "$HORIZON"
	kill "$sampler_pid" 2>/dev/null
	wait "$sampler_pid" 2>/dev/null || true
	sampler_pid=
	if [ -n "$steer_pid" ]; then
		kill "$steer_pid" 2>/dev/null
		wait "$steer_pid" 2>/dev/null || true
		steer_pid=
		# How often steer really wrote the snapshot (its summary on exit), for the
		# simulator's model of this run's pinning.
		sed -n 's/^steer: [0-9]* passes, one every \([0-9.]*\) s.*/\1/p' "$WORK/steer.log" | tail -1 >"$WORK/cadence"
	fi
	reset
	# Accounting has every job once slurmdbd has caught up.
	for _ in $(seq 60); do
		SLURM_TIME_FORMAT=%s in_lab sacct -X -n -P -a --name="$name" -S now-2hours -o JobIDRaw,Submit,Start,End >"$WORK/acct"
		[ "$(wc -l <"$WORK/acct")" -ge "$(wc -l <"$WORK/ids")" ] && break
		sleep 1
	done
	[ "$(wc -l <"$WORK/acct")" -ge "$(wc -l <"$WORK/ids")" ] ||
		die "accounting holds $(wc -l <"$WORK/acct") of run $name's $(wc -l <"$WORK/ids") jobs"
	if [ -n "${SCALE_LOGS:-}" ]; then
		install -d "$SCALE_LOGS"
		for f in stream ids acct samples steer.log; do cp "$WORK/$f" "$SCALE_LOGS/$name.$f"; done
		# slurmctld's own counters for the run (reset as it began): how long its main
		# scheduler and backfill cycles took, which the simulator takes as instant.
		in_lab sdiag >"$SCALE_LOGS/$name.sdiag" 2>&1 || true
	fi
	awk -v t0="$t0" '
		FILENAME ~ /ids$/ { split($0, a, " "); size[a[1]] = a[2]; secs[a[1]] = a[3]; off[a[1]] = a[4]; next }
		{ split($0, f, "|"); if (f[1] in size) { o = f[2] - t0; printf "%.3f %d %d\n", (o > off[f[1]] ? o : off[f[1]]), size[f[1]], secs[f[1]] } }
	' "$WORK/ids" "$WORK/acct" >"$WORK/asrun"
	awk -v end="$end" -v t0="${t0%.*}" -v warm="$WARM" -v cap="$CAPACITY" -v big="$(sort -n -k2 "$WORK/stream" | tail -1 | cut -d' ' -f2)" \
		-v unpinned="$(grep -c 'unpinned job' "$WORK/steer.log" || true)" '
		FILENAME ~ /ids$/ { size[$1] = $2; off[$1] = $4; next }
		FILENAME ~ /acct$/ {
			split($0, f, "|"); id = f[1]
			if (!(id in size)) next
			if (f[2] - t0 - off[id] > lag) lag = f[2] - t0 - off[id]
			if (f[3] ~ /^[0-9]+$/ && f[3] > 0 && f[3] <= end) {
				started++; w[started] = f[3] - f[2]; wsum += w[started]
				# by size: over half the largest request of the stream, or not
				k = (2 * size[id] > big); ws[k] += w[started]; nw[k]++
				e = (f[4] ~ /^[0-9]+$/ && f[4] > 0 && f[4] < end) ? f[4] : end
				held += size[id] * (e - f[3])
				s = (f[3] > t0 + warm) ? f[3] : t0 + warm
				if (e > s) steady += size[id] * (e - s)
			} else pending++
			next
		}
		$1 == "S" { st += $2; ns++ }
		$1 == "J" && $4 ~ /shard:[^:]*_g[0-9]+:/ { pin[$2] = 1 }
		END {
			n = 0; for (id in pin) n++
			asort_w()
			p95 = started ? w[int(0.95 * (started - 1)) + 1] : 0
			printf "%d %d %.1f %.1f %.1f %.1f %.1f %.1f %.1f %d %d %.1f\n", started, pending + 0, started ? wsum / started : 0, p95,
				nw[0] ? ws[0] / nw[0] : 0, nw[1] ? ws[1] / nw[1] : 0,
				100 * held / (cap * (end - t0)), 100 * steady / (cap * (end - t0 - warm)), ns ? st / ns : 0, n, unpinned, lag + 0
		}
		function asort_w(   i, j, x) { for (i = 2; i <= started; i++) { x = w[i]; for (j = i - 1; j > 0 && w[j] > x; j--) w[j + 1] = w[j]; w[j + 1] = x } }
	' "$WORK/ids" "$WORK/acct" "$WORK/samples"
}

cols="started pending wait_mean_s wait_p95_s wait_small_s wait_large_s alloc_pct alloc_steady_pct stranded pinned unpinned lag_s"
row() { printf '%-5s %-15s %7s %7s %11s %10s %12s %12s %9s %16s %8s %6s %8s %5s\n' "$@"; }
row seed mode $cols
[ -n "${RESULTS:-}" ] && printf 'seed\tmode\t%s\n' "${cols// /$'\t'}" >"$RESULTS"
# The lab's ReloadInterval, for the simulator's model of pinning.
RELOAD=$(sed -n 's/^ReloadInterval *= *//p' "$ROOT/etc/slurm/gpumem.conf" | tail -1)
# replay FILE replays a stream in the simulator on the lab's GPUs (internal/sim): first
# fit (native), gpumem's policy for every start, gpumem's for the jobs that start at
# once (at-submit, what pinning reaches), and the lab's pinning (sim.PinModel: steer's
# INTERVAL and UNPIN, the lab's ReloadInterval); every job runs to its end there, and it
# is scored over the lab's window, with its horizon and warm-up (sim.MeasureStream).
# steer's interval is the one its last pinned run measured when there is one: a pass
# that overran its --interval wrote the snapshot later than asked. The jobs Slurm starts
# unpinned go by steer's node weights (-weights), as in the lab.
replay() {
	local every=$INTERVAL
	[ -s "$WORK/cadence" ] && every=$(cat "$WORK/cadence")s
	"$WORK/streamtool" replay -gpus "$WORK/gpus.json" -stream "$1" -horizon "$HORIZON" -warm "$WARM" \
		-interval "$every" -reload "${RELOAD:-10s}" -unpin "$UNPIN" -weights \
		${SIM_SLURM:+-slurm-backfill "$SIM_SLURM"}
}
for seed in $SEEDS; do
	for mode in native pinned; do
		run "$seed" "$mode" >"$WORK/r" # not in a subshell: cleanup must see its helpers
		r=$(cat "$WORK/r")
		row "$seed" "$mode" $r
		[ -n "${RESULTS:-}" ] && printf '%s\t%s\t%s\n' "$seed" "$mode" "${r// /$'\t'}" >>"$RESULTS"
		echo "$seed $mode $r" >>"$WORK/all"
		# The simulator on this run's own arrivals, as Slurm received them: what the
		# lab's figures are to be held against when a run fell behind its stream.
		want=first-fit
		[ -n "$SIM_SLURM" ] && want=slurm-native # Slurm's own choice of node, not first fit
		[ "$mode" = pinned ] && want=pinned
		[ "$mode" = pinned ] && [ -n "$SIM_SLURM" ] && want=slurm-pinned
		[ "$mode" = pinned ] && [ -s "$WORK/cadence" ] && echo "steer wrote a snapshot every $(cat "$WORK/cadence") s (--interval $INTERVAL)" >&2
		replay "$WORK/asrun" | while read -r pol st pend wm wp wsm wl al als pm pu; do
			[ "$pol" = "$want" ] || continue
			row "$seed" "sim-run-$mode" "$st" "$pend" "$wm" "$wp" "$wsm" "$wl" "$al" "$als" - "$pm" "$pu" -
			echo "$seed $mode $st $pend $wm $wp $wsm $wl $al $als 0 $pm $pu 0" >>"$WORK/asrun-all"
		done
	done
	replay "$WORK/stream" | while read -r pol st pend wm wp wsm wl al als pm pu; do
		row "$seed" "sim-$pol" "$st" "$pend" "$wm" "$wp" "$wsm" "$wl" "$al" "$als" - "$pm" "$pu" -
		echo "$seed sim-$pol $st $pend $wm $wp $wsm $wl $al $als 0 $pm $pu 0" >>"$WORK/sim"
	done
done
# Paired differences per seed, b − a: mean ± standard error over the seeds; for the lab
# (pinned − native) and for the simulator's replays.
paired() {
	awk -v cols="$cols" -v a="$1" -v b="$2" -v what="$3" '
		{ for (i = 3; i <= 11; i++) v[$1, $2, i] = $i; seen[$1] = 1 }
		END {
			split(cols, c, " ")
			for (s in seen) k++
			printf "%s over %d seed(s):", what, k
			for (i = 3; i <= 11; i++) {
				m = 0; q = 0
				for (s in seen) { d = v[s, b, i] - v[s, a, i]; m += d; q += d * d }
				m /= k; se = (k > 1) ? sqrt((q - k * m * m) / (k - 1) / k) : 0
				printf " %s %+.1f±%.1f", c[i - 2], m, se
			}
			print ""
		}' "$4"
}
paired native pinned "pinned - native" "$WORK/all"
asrun_native="first fit"
[ -n "$SIM_SLURM" ] && asrun_native="Slurm's own choice"
paired native pinned "simulator on each run's own arrivals${SIM_SLURM:+, scheduling as Slurm does}, the lab's pinning - $asrun_native (stranded not modelled)" "$WORK/asrun-all"
paired sim-first-fit sim-pinned "simulator, the lab's pinning - first fit" "$WORK/sim"
paired sim-first-fit sim-gpumem "simulator, gpumem for every start - first fit" "$WORK/sim"
paired sim-first-fit sim-at-submit "simulator, gpumem for jobs that start at once, first fit for the rest - first fit" "$WORK/sim"
if [ -n "$SIM_SLURM" ]; then
	paired sim-slurm-native sim-slurm-pinned "simulator scheduling as Slurm does, the lab's pinning - Slurm's own choice" "$WORK/sim"
	paired sim-slurm-native sim-slurm-gpumem "simulator scheduling as Slurm does, gpumem for every start - Slurm's own choice" "$WORK/sim"
fi
