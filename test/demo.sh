#!/bin/bash
# `make demo`: a short tour of gpumem in the real-Slurm lab. Brings the lab up (Slurm
# 22.05 by default, 24.11 with LAB_SLURM=24.11; three nodes with fake H100, A100-MIG and
# L4 GPUs), submits gpu:mem jobs of several sizes, shows where each landed and each GPU's
# memory map, shows a refusal, why a job waits and what an ended job used, and leaves
# the lab up for you to try. Safe to run again.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export LAB_SLURM=${LAB_SLURM:-$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names --host)}
LAB=$REPO/test/lab/lab.sh
# A chroot lab's files are under ROOT here, its commands run through lab.sh.
ROOT=$("$LAB" where | sed -n 's/^root=//p')
GRES_CONF=$ROOT/etc/slurm/gres.conf
INVENTORY=$ROOT/etc/slurm/gpumem.d
for cmd in sinfo squeue sbatch srun scancel scontrol; do
	eval "$cmd() { \"\$LAB\" run $cmd \"\$@\"; }"
done

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
show() {
	printf '\033[2m$ %s\033[0m\n' "$*"
	"$@"
}

[ "$(id -u)" -eq 0 ] || {
	echo "demo: run as root (it starts Slurm daemons): sudo make demo" >&2
	exit 2
}
[ -x "$REPO/bin/gpumemctl" ] && [ -f "$REPO/bin/job_submit_gpumem.so" ] || make -s -C "$REPO" build

bold "1. A Slurm cluster on this machine: three nodes, fake GPUs, gpumem plugins loaded"
"$LAB" up
show sinfo -N -p gpu -o '%6N %G'
show sinfo -o '%10P %N'
echo
echo "gres.conf and every node's Gres= above were written by gpumem's node sidecar (gpumemd --once) from"
echo "what each node's NVML reports (here fake NVML files in test/lab/nodes/):"
show "$REPO/bin/gpumemctl" inventory --inventory "$INVENTORY" -o table

bold "2. Users ask for GPU memory, not GPUs"
scancel --quiet -u root || true
declare -a ids asks
submit() { # options-or-empty size
	local p=() out
	[ -n "$1" ] && read -r -a p <<<"$1"
	printf '\033[2m$ sbatch %s--gres=gpu:mem:%s --wrap "sleep 600"\033[0m\n' "${1:+$1 }" "$2"
	out=$(sbatch "${p[@]}" --gres="gpu:mem:$2" --job-name="demo-$2" --wrap "sleep 600" 2>&1)
	echo "$out"
	ids+=("${out##* }")
	asks+=("gpu:mem:$2${1:+ $1}")
}
submit "" 20g
submit "" 30g
submit "" 60g
submit "" 30g
submit "-p inference" 12g
submit "-w n2" 4g
submit "-w n2" 8g
sleep 2

# Allocations, one line per job and device: JOB NODE NAME TYPE COUNT IDX.
allocs() {
	local id
	for id in "${ids[@]}"; do
		scontrol -d show job "$id" | awk -v id="$id" '
			/^ *Nodes=/ {
				node = $1; sub("Nodes=", "", node)
				g = $0; sub(/.*GRES=/, "", g)
				n = split(g, e, /\),?/)
				for (i = 1; i < n; i++) {
					split(e[i], a, /\(/); k = split(a[1], f, ":")
					typ = (k == 3) ? f[2] : "-"
					det = a[2]; sub(/^IDX:/, "", det)
					if (det ~ /\//) { # 24.11 writes shards as used/total per GPU: the used one
						m = split(det, u, ","); det = ""
						for (x = 1; x <= m && det == ""; x++) { split(u[x], v, "/"); if (v[1] > 0) det = x - 1 }
					}
					print id, node, f[1], typ, f[k], det
				}
			}'
	done
}

bold "3. Where each job landed"
alloc=$(allocs)
inventory=$("$REPO/bin/gpumemctl" inventory --inventory "$INVENTORY" -o table)
printf '%-6s %-26s %-20s %-5s %-4s %s\n' JOB ASKED "GOT (native GRES)" NODE GPU SLICE
for i in "${!ids[@]}"; do
	id=${ids[$i]}
	tres=$(squeue -h -j "$id" -o %b)
	line=$(echo "$alloc" | awk -v id="$id" '$1 == id' | head -1)
	if [ -z "$line" ]; then
		printf '%-6s %-26s %-20s %s\n' "$id" "${asks[$i]}" "${tres#gres[:/]}" "(pending: $(squeue -h -j "$id" -o %r))"
		continue
	fi
	read -r _ node name typ count idx <<<"$line"
	# The device behind Slurm's index, from the generated gres.conf.
	gpu=$(awk -v n="$node" -v name="$name" -v typ="$typ" -v idx="$idx" '
		$1 == "NodeName=" n && $2 == "Name=" name && (typ == "-" || $3 == "Type=" typ) {
			f = $0; sub(/.*(File|MultipleFiles)=/, "", f); sub(/[ ,].*/, "", f); sub(/.*\//, "", f)
			if (typ != "-" && typ ~ /g\./) { print f; exit }
			if (c++ == idx) { print f; exit }
		}' "$GRES_CONF")
	# A MIG instance may be named by its caps file alone (Slurm 22.05, docs/gres.md):
	# the inventory says which GPU holds it.
	if [[ "$gpu" == nvidia-cap* ]]; then
		gpu=$(echo "$inventory" | awk -v node="$node" -v cap="$gpu" '
			$1 != "GI" && $2 ~ /^[0-9]+$/ { n = $1; g = $2 }  # a GPU row; its MIG (GI) rows follow
			n == node && (index($0, "/" cap " ") || index($0, "/" cap "]")) { print g; exit }')
	fi
	gpu=${gpu#nvidia}
	if [ "$name" = shard ]; then
		total=$(awk -v n="$node" '$1 == "NodeName=" n && $2 == "Name=shard" {sub("Count=", "", $3); print $3; exit}' "$GRES_CONF")
		slice="$count of $total GiB, shared"
	elif [[ "$typ" == *g.* ]]; then
		slice="MIG instance $typ"
	else
		slice="whole GPU ($typ)"
	fi
	printf '%-6s %-26s %-20s %-5s %-4s %s\n' "$id" "${asks[$i]}" "${tres#gres[:/]}" "$node" "$gpu" "$slice"
done

bold "4. Each GPU's memory map (# = 1 GiB held by a job, . = free)"
awk -v alloc="$alloc" '
	BEGIN {
		n = split(alloc, L, "\n")
		for (i = 1; i <= n; i++) { split(L[i], a, " "); if (a[3] == "shard") used[a[2] " " a[6]] += a[5]; if (a[3] == "gpu") whole[a[2] " " a[4]]++ }
	}
	$2 == "Name=shard" {
		node = substr($1, 10); cnt = substr($3, 7) + 0; i = idx[node]++
		u = used[node " " i] + 0
		bar = ""; for (k = 0; k < cnt; k++) bar = bar (k < u ? "#" : ".")
		printf "%-3s GPU %d  %3d/%3d GiB  %s\n", node, i, u, cnt, bar
	}
	$2 == "Name=gpu" && $3 ~ /g\./ {
		node = substr($1, 10); typ = substr($3, 6)
		mig[node " " typ]++
		state = (mig[node " " typ] <= whole[node " " typ]) ? "held by a job" : "free"
		printf "%-3s GPU 0  MIG %-8s %s\n", node, typ, state
	}' "$GRES_CONF"

bold "5. A request that can never fit is refused at once, with the reason"
show srun --gres=gpu:mem:500g hostname || true
echo
show srun -p inference --gres=gpu:mem:30g hostname || true

bold "6. Why a job waits: gpumemctl why"
# Three more 12 GiB jobs on the L4s (22.4 GiB each): every L4 holds one, so a fifth
# waits although 40 GiB is free in all.
for _ in 1 2 3; do
	out=$(sbatch -p inference --gres=gpu:mem:12g --job-name=demo-fill --wrap "sleep 600" 2>&1)
	ids+=("${out##* }")
done
out=$(sbatch -p inference --gres=gpu:mem:12g --job-name=demo-waits --wrap "sleep 600" 2>&1)
ids+=("${out##* }")
sleep 3
printf '\033[2m$ gpumemctl why %s\033[0m\n' "${ids[-1]}"
"$LAB" run "/var/lib/gpumem-lab/$LAB_SLURM/bin/gpumemctl" why "${ids[-1]}" --inventory "/var/lib/gpumem-lab/$LAB_SLURM/inv" || true
scancel --quiet -u root "${ids[@]}" || true

bold "7. What a job used: gpumemctl used, after the job and its node's gpumemd are gone"
# n3's gpumemd for a minute, on a copy of its fake NVML file where the job's process
# holds 3 GiB of its 4 GiB slice: when the job ends, gpumemd writes what it used into
# the job's accounting record (AdminComment), where sacct keeps it.
side=$(mktemp -d) gpid=""
trap '[ -z "$gpid" ] || kill "$gpid" 2>/dev/null || true; rm -rf "$side"' EXIT
sc=scontrol
if [ -n "$ROOT" ]; then
	for c in scontrol squeue scancel sacct sacctmgr; do
		printf '#!/bin/sh\nexec chroot %s %s "$@"\n' "$ROOT" "$c" >"$side/$c"
		chmod 755 "$side/$c"
	done
	sc=$side/scontrol
fi
out=$(sbatch -p inference --gres=gpu:mem:4g --job-name=demo-used --wrap "sleep 600" 2>&1)
job=${out##* }
sleep 2
pid=""
for env in /proc/[0-9]*/environ; do
	p=${env#/proc/}
	p=${p%/environ}
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && tr '\0' '\n' <"$env" 2>/dev/null | grep -qx "SLURM_JOB_ID=$job" && pid=$p
done
gpu=$(ids=("$job") && allocs | awk '{print $6; exit}')
python3 - "$REPO/test/lab/nodes/n3.json" "$side/n3.json" "${gpu:-0}" "$pid" <<'PY'
import json, sys
src, dst, gpu, pid = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = json.load(open(src))
if pid:
    d["gpus"][gpu]["processes"] = [{"pid": int(pid), "used_mib": 3072}]
json.dump(d, open(dst, "w"))
PY
cat >"$side/gpumem.conf" <<CONF
ShardUnit = 1GiB
SlurmConf = $ROOT/etc/slurm/slurm.conf
[gpumemd]
NVML = fake:$side/n3.json
NodeName = n3
Listen = 127.0.0.1:0
PollInterval = 1s
HistoryDB = $side/history.db
HistoryBucket = 1s
HealthState =
Scontrol = $sc
CONF
"$REPO/bin/gpumemd" --config "$side/gpumem.conf" >"$side/gpumemd.log" 2>&1 &
gpid=$!
sleep 8
scancel "$job"
for _ in $(seq 30); do
	grep -q "job summary written.*job=$job " "$side/gpumemd.log" && break
	sleep 1
done
kill "$gpid" 2>/dev/null
wait "$gpid" 2>/dev/null || true
show "$LAB" run "/var/lib/gpumem-lab/$LAB_SLURM/bin/gpumemctl" used "$job" || true

bold "8. Try it yourself"
cat <<-TXT
	The demo's jobs are cancelled; the lab is still up.${ROOT:+ Slurm $LAB_SLURM runs in a chroot:
	run its commands as  test/lab/lab.sh run srun ...  (with LAB_SLURM=$LAB_SLURM).} For example:
	    srun --gres=gpu:mem:20g env | grep -E 'CUDA|SHARD'
	    sbatch -w n2 --gres=gpu:mem:4g --wrap 'sleep 60'; squeue -o '%i %b %N'
	    scontrol -d show job <ID>        # the GPU (IDX) and slice each job holds
	More in docs/lab.md. Stop the lab with:  make lab-down   (or test/lab/lab.sh down)
TXT
