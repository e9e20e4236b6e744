#!/bin/bash
# Measures steering on a lab (24.11 unless LAB_SLURM says 22.05): the same shard job
# stream submitted twice, once to Slurm as it is and once with `gpumemctl steer --once`
# run before every submission, and compares jobs placed, shards placed, pending jobs
# and GPU memory left stranded.
#
#   LAB_SLURM=24.11 test/lab/lab.sh up
#   test/steer/run.sh [SEEDS] [POLICY] [TUNE] [REF] [QUEUE]
#                     # default "42 43 44 45 46" gpumem 1.3 24 drop
#
# STEER=weights (the default) steers by node weights only. STEER=pin needs a lab with
# per-GPU shard types (LAB_SHARD_TYPES=per-gpu test/lab/lab.sh up): steer then also
# writes the usage snapshot (--snapshot), so job_submit pins each job to the GPU the
# plugin's PinPolicy (gpumem unless LAB_PIN_POLICY says otherwise) chooses; the native
# run has no snapshot, so nothing is pinned and Slurm chooses as it would without gpumem.
#
# The stream: single-GPU tasks of the trace's default workload (openb_pod_list_default),
# drawn with replacement by the seed until the next would take the demand past TUNE
# times the lab's shard capacity; a task's GPU share becomes that share of a REF GiB
# GPU, rounded up (the lab's GPUs are 80 GiB H100s and 22 GiB L4s). Jobs never end
# during a run. Steering is told the stream's sizes (--sizes), as a site would give it
# the sizes its jobs ask, from its job history; it learns nothing else of the stream.
#
# QUEUE=drop follows the trace protocol (Weng et al.): a job that Slurm does not start
# at once is cancelled, as a task that fits nowhere fails. QUEUE=keep leaves it
# pending, and then Slurm's backfill reservations for the pending jobs also decide
# what later jobs may start, in both runs alike. Needs jq and the trace folder: $GPUMEM_TRACE_DIR or ../shared/data beside the
# repository. Leaves the lab up, its queue empty and its weights back at 1.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SEEDS=${1:-42 43 44 45 46}
POLICY=${2:-gpumem}
TUNE=${3:-1.3}
REF=${4:-24}
QUEUE=${5:-drop}
STEER=${STEER:-weights}
export LAB_SLURM=${LAB_SLURM:-$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names --gate typed-shards | head -1)}
ROOT=$("$REPO/test/lab/lab.sh" where | sed -n 's/^root=//p')
TRACE=${GPUMEM_TRACE_DIR:-$REPO/../shared/data/alibaba-gpu-v2023}
PODS=$TRACE/openb_pod_list_default.csv
BIN=/var/lib/gpumem-lab/$LAB_SLURM/steer/gpumemctl # as the lab sees it
SNAP=/var/lib/gpumem-lab/$LAB_SLURM/usage.json     # the lab's gpumem.conf UsageSnapshot

lab() { "$REPO/test/lab/lab.sh" run "$@"; }
die() {
	echo "steer: $*" >&2
	exit 1
}

[ -r "$PODS" ] || die "no trace at $PODS; get https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023 (its csv folder) and set GPUMEM_TRACE_DIR to it"
lab scontrol ping >/dev/null 2>&1 || die "the $LAB_SLURM lab is down: LAB_SLURM=$LAB_SLURM test/lab/lab.sh up"
case $STEER in
weights) steer_args=() ;;
pin)
	grep -qi '^ShardTypes = per-gpu' "$ROOT/etc/slurm/gpumem.conf" ||
		die "STEER=pin needs typed shards: LAB_SLURM=$LAB_SLURM LAB_SHARD_TYPES=per-gpu test/lab/lab.sh up"
	steer_args=(--snapshot "$SNAP")
	;;
*) die "STEER=$STEER; want weights or pin" ;;
esac
install -d "$ROOT$(dirname "$BIN")"
(cd "$REPO" && go build -o "$ROOT$BIN" ./cmd/gpumemctl)

# Shard capacity and the nodes with shards, from the lab's own report.
read -r CAPACITY NODES < <(lab "$BIN" steer report -o json |
	jq -r '[([.gpus[] | .used + .free] | add), ([.gpus[].node] | unique | join(","))] | @tsv')

# gib writes shard counts as the sizes --sizes takes: the lab's ShardUnit is 1 GiB.
gib() { sed 's/[0-9][0-9]*/&G/g' <<<"$1"; }

# stream SEED prints one shard count a line.
stream() {
	awk -F, -v seed="$1" -v cap="$CAPACITY" -v tune="$TUNE" -v ref="$REF" '
		NR > 1 && $4 == 1 && $5 > 0 { s[n++] = int(($5 * ref + 999) / 1000) }
		END {
			srand(seed)
			while (1) {
				x = s[int(rand() * n)]
				if (total + x > tune * cap) break
				total += x
				print x
			}
		}' "$PODS"
}

reset() {
	lab scancel --quiet -u root >/dev/null 2>&1 || true
	for _ in $(seq 100); do
		[ -z "$(lab squeue -h -o %i)" ] && break
		sleep 0.1
	done
	lab scontrol update nodename="$NODES" weight=1
	rm -f "$ROOT$SNAP"
}

# drop_unless_started cancels job $1 unless it runs within two scheduling passes.
drop_unless_started() {
	local _
	for _ in $(seq 20); do
		[ "$(lab squeue -h -j "$1" -o %T)" = RUNNING ] && return 0
		sleep 0.1
	done
	lab scancel "$1"
	unplaced+=",$2"
}

# run SEED MODE prints: placed-jobs placed-shards not-placed-jobs free-shards
# stranded-shards, stranded counted against the sizes of the jobs not placed (pending or
# dropped), or against the stream's when every job was placed.
run() {
	local seed=$1 mode=$2 sizes n id placed against
	unplaced=""
	reset
	sizes=$(stream "$seed" | paste -sd, -)
	for n in ${sizes//,/ }; do
		if [ "$mode" = steer ]; then
			lab "$BIN" steer --once --policy "$POLICY" --sizes "$(gib "$sizes")" "${steer_args[@]}" >/dev/null
		fi
		id=$(lab sbatch --parsable -o /dev/null --gres="shard:$n" --wrap 'sleep 3600')
		if [ "$QUEUE" = drop ]; then drop_unless_started "$id" "$n"; fi
	done
	sleep 3 # backfill runs every second in the lab
	placed=$(lab squeue -h -t R -o %i | wc -l)
	for n in $(lab squeue -h -t PD -o %b | grep -o '[0-9]*$'); do unplaced+=",$n"; done
	against=${unplaced#,}
	lab "$BIN" steer report -o json --sizes "$(gib "${against:-$sizes}")" | jq -r --arg placed "$placed" --arg un "$against" '
		($un | split(",") | map(select(. != "")) | length) as $n
		| "\($placed) \([.gpus[].used] | add) \($n) \(.free_shards) \(.stranded_shards)"'
}

printf '%-5s %-9s %6s %6s %7s %5s %8s\n' seed mode placed shards unplaced free stranded
sum() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); for (i = 1; i <= 5; i++) printf "%s%d", (i > 1 ? " " : ""), x[i] + y[i] }'; }
tot_ff="0 0 0 0 0" tot_st="0 0 0 0 0"
for seed in $SEEDS; do
	ff=$(run "$seed" first-fit)
	st=$(run "$seed" steer)
	printf '%-5s %-9s %6s %6s %7s %5s %8s\n' "$seed" first-fit $ff "$seed" "$POLICY" $st
	tot_ff=$(sum "$tot_ff" "$ff") tot_st=$(sum "$tot_st" "$st")
done
reset
printf '%-5s %-9s %6s %6s %7s %5s %8s\n' all first-fit $tot_ff all "$POLICY" $tot_st
awk -v a="$tot_ff" -v b="$tot_st" -v p="$POLICY" 'BEGIN {
	split(a, x, " "); split(b, y, " ")
	printf "%s/first-fit: jobs placed %.3f, shards placed %.3f, stranded shards %s\n", p, y[1] / x[1], y[2] / x[2], (x[5] ? sprintf("%.3f", y[5] / x[5]) : y[5] " vs 0")
}'
