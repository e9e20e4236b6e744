#!/bin/bash
# The lab's MIG reload, run by gpumemd --mig-reload after an apply rewrote gres.conf:
# what an admin's reload command does on a real cluster, done here on the lab's own
# slurm.conf (it refuses any other). gpumemd hands it the node and the node's new
# slurm.conf Gres= in GPUMEM_NODE and GPUMEM_NODE_GRES.
#
# slurmctld takes a node's new count of File-backed GRES (MIG instances) only from
# slurm.conf, and only when it starts: `scontrol update nodename=N gres=...` is refused
# ("invalid with File configuration") on 22.05 and 24.11, and 22.05's reconfigure keeps
# the old count. So before the release table's reconfigure-execs gate (23.11) it
# restarts slurmctld; from there `scontrol reconfigure` restarts it. slurmd reads gres.conf when it starts. slurmctld goes first, so the node
# never registers a count slurmctld does not know (it would mark it INVALID).
set -euo pipefail
LAB=$(cd "$(dirname "$0")/.." && pwd)
CONF=/etc/slurm/slurm.conf
node=${GPUMEM_NODE:?gpumemd sets GPUMEM_NODE}
gres=${GPUMEM_NODE_GRES:?gpumemd sets GPUMEM_NODE_GRES}
case "$node$gres" in *[!A-Za-z0-9_.:,-]*)
	echo "mig-reload: node $node or Gres=$gres has characters a lab node line does not" >&2
	exit 2
	;;
esac
# A reload cut short by a kill -9 of gpumemd runs on; the next one waits for it.
exec 9>>"$LAB/run/mig-reload.lock"
flock 9
head -1 "$CONF" | grep -q '^# The gpumem lab' || {
	echo "mig-reload: $CONF is not the lab's: not touched" >&2
	exit 1
}
grep -q "^NodeName=$node .* Gres=" "$CONF" || {
	echo "mig-reload: no NodeName=$node line with Gres= in $CONF" >&2
	exit 1
}
sed -i -E "s/^(NodeName=$node .* )Gres=[^ ]*/\1Gres=$gres/" "$CONF"

# gone waits for a daemon sent SIGTERM, and after 15 s sends SIGKILL, as systemd's stop
# does: 24.11's slurmd has hung in its shutdown (every thread waiting in conmgr) when
# SIGTERM came a second or two after it started. Its jobs' slurmstepd live on.
gone() {
	local i
	for i in $(seq 200); do
		kill -0 "$1" 2>/dev/null || return 0
		if [ "$i" -eq 150 ]; then
			echo "mig-reload: pid $1 still runs 15s after SIGTERM: SIGKILL" >&2
			kill -9 "$1" 2>/dev/null || true
		fi
		sleep 0.1
	done
	echo "mig-reload: pid $1 still runs 5s after SIGKILL" >&2
	return 1
}
ping_ctld() {
	for _ in $(seq 300); do
		scontrol ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "mig-reload: slurmctld did not answer within 30s" >&2
	return 1
}

# lab.sh writes the release's gates beside this script.
if grep -qw reconfigure-execs "$LAB/bin/mig-reload.gates"; then
	scontrol reconfigure
else
	pid=$(cat "$LAB/run/slurmctld.pid")
	kill "$pid"
	gone "$pid"
	slurmctld -i </dev/null >/dev/null 2>&1
fi
ping_ctld
pid=$(cat "$LAB/run/slurmd-$node.pid" 2>/dev/null || true)
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
	kill "$pid"
	gone "$pid"
fi
slurmd -N "$node" </dev/null >/dev/null 2>&1
echo "mig-reload: $node Gres=$gres; slurmctld and slurmd $node restarted"
