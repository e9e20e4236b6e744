#!/bin/bash
# Read-only check of gpumem's NVML inventory on a machine with a real NVIDIA GPU.
#
# It prints what gpumemctl discovers (inventory and gres.conf), cross-checks GPU count,
# memory and MIG mode against nvidia-smi, and validates the gres.conf with slurmd -G when
# slurmd is installed. It never changes MIG mode or instances and writes only under a
# temporary directory (and bin/ when it has to build).
#
# The machine may have no network: use a prebuilt binary (GPUMEMCTL=path, or
# bin/gpumemctl), or build offline from vendor/ or a module cache carried along.
#
#   test/gpu/check.sh                  # node name: the short host name
#   NODE=gpu01 test/gpu/check.sh
set -u
cd "$(dirname "$0")/../.." || exit 2

fail=0
say() { printf '== %s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*"; fail=1; }

BIN=${GPUMEMCTL:-}
if [ -z "$BIN" ] && [ -x bin/gpumemctl ]; then
	BIN=bin/gpumemctl
fi
if [ -z "$BIN" ]; then
	command -v go >/dev/null || { echo "no gpumemctl binary (GPUMEMCTL= or bin/gpumemctl) and no Go to build one" >&2; exit 2; }
	say "building bin/gpumemctl offline"
	mkdir -p bin
	mod=mod
	[ -d vendor ] && mod=vendor
	GOFLAGS="-mod=$mod -buildvcs=false" GOPROXY=off CGO_ENABLED=1 go build -o bin/gpumemctl ./cmd/gpumemctl || exit 2
	BIN=bin/gpumemctl
fi

NODE=${NODE:-$(hostname -s)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

say "gpumemctl: $BIN, node $NODE"
if command -v nvidia-smi >/dev/null; then
	say "nvidia-smi"
	nvidia-smi --query-gpu=index,name,uuid,memory.total,mig.mode.current,mig.mode.pending --format=csv
fi

say "gpumemctl inventory --nvml=real -o table"
"$BIN" inventory --nvml=real --node "$NODE" -o table || bad "inventory (table)"
"$BIN" inventory --nvml=real --node "$NODE" >"$WORK/inventory.json" || bad "inventory (json)"
say "gpumemctl inventory --nvml=real (JSON)"
cat "$WORK/inventory.json"

say "gpumemctl gres generate --nvml=real"
"$BIN" gres generate --nvml=real --node "$NODE" --out - >"$WORK/gres.conf" || bad "gres generate"
cat "$WORK/gres.conf"
"$BIN" gres generate --nvml=real --node "$NODE" --inventory-out "$WORK/again.json" --out "$WORK/gres2.conf" >/dev/null || bad "gres generate --out"
"$BIN" gres generate --nvml=real --node "$NODE" --inventory-out "$WORK/again.json" --out "$WORK/gres2.conf" | grep -q "gres2.conf: unchanged" ||
	bad "a second generation on an unchanged node rewrote gres.conf"

if command -v nvidia-smi >/dev/null; then
	say "cross-check with nvidia-smi"
	want=$(nvidia-smi --query-gpu=index,memory.total,mig.mode.current --format=csv,noheader,nounits | tr -d ' ')
	got=$(python3 - "$WORK/inventory.json" <<'PY' 2>/dev/null
import json, sys
for g in json.load(open(sys.argv[1]))["nodes"][0]["gpus"]:
    print("%d,%d,%s" % (g["index"], g["memory_mib"], "Enabled" if g.get("mig") else "Disabled"))
PY
	)
	# nvidia-smi prints [N/A] for MIG on GPUs without it: compare index and memory there.
	want=$(printf '%s\n' "$want" | sed 's/\[N\/A\]/Disabled/')
	if [ "$want" = "$got" ]; then
		echo "ok: index, memory MiB and MIG mode agree for $(printf '%s\n' "$got" | wc -l) GPU(s)"
	else
		bad "inventory disagrees with nvidia-smi"
		printf 'nvidia-smi:\n%s\ngpumemctl:\n%s\n' "$want" "$got"
	fi
fi

if command -v slurmd >/dev/null; then
	say "slurmd -G on the generated gres.conf"
	gres=$(sed -n "s/^# slurm.conf: NodeName=$NODE Gres=//p" "$WORK/gres.conf")
	cat >"$WORK/slurm.conf" <<CONF
ClusterName=gpucheck
SlurmctldHost=localhost
GresTypes=gpu,shard
SlurmdSpoolDir=$WORK/spool
NodeName=$NODE NodeHostname=$(hostname) CPUs=$(nproc) Gres=$gres State=UNKNOWN
PartitionName=check Nodes=$NODE Default=YES
CONF
	# slurmd initialises its cgroup plugin before it reads gres.conf. Slurm 22.05's
	# cgroup/v2 needs systemd's dbus; on a node without it (a container or microVM) it
	# stops there, so the check names cgroup/v1, which only has to load.
	if [ ! -S /run/dbus/system_bus_socket ]; then
		echo "CgroupPlugin=cgroup/v1" >"$WORK/cgroup.conf"
	fi
	"$BIN" gres check "$WORK/gres.conf" --slurm-conf "$WORK/slurm.conf" --node "$NODE" || bad "slurmd -G rejected the gres.conf"
else
	say "slurmd not installed: gres.conf not validated by Slurm (apt-get install slurmd where there is a network)"
fi

if [ "$fail" -ne 0 ]; then
	say "FAILED"
	exit 1
fi
say "all checks passed"
