#!/bin/bash
# The gpumem lab: a real Slurm with three fake-GPU nodes on this host.
#
#   lab.sh up|down|status|where|chroot|submitter|run CMD...  (LAB_SLURM=RELEASE, default 22.05)
#
# RELEASE is a row of the release table (internal/slurmrel/releases.txt;
# `go run ./cmd/slurm-release names` lists them).
#
# LAB_CONFIGLESS=1 starts it as a configless cluster (test/lab/configless.sh).
# LAB_BACKUP_CTLD=1 adds a backup slurmctld on the same state (test/lab/backup-ctld.sh).
# LAB_SCALE=N (a chroot lab with CgroupPlugin=disabled: 24.11 or later) replaces the three nodes with N of mixed GPU models
# (test/lab/nodes.sh), for test/steer/scale.sh.
# LAB_SLURMD_TIMEOUT=S sets SlurmdTimeout (Slurm's default 300 otherwise); test/faults.sh
# sets 30, so that slurmctld's own purge of jobs lost in a crash comes within its wait.
#
# 22.05 is Debian bookworm's Slurm, installed on the host (of Debian 12), on the standard
# ports and /etc/slurm, so plain srun/sbatch/squeue talk to it. Every other release runs
# in a chroot on ports of its own (the table's): Debian's packages of a suite (24.11
# trixie's, 26.05 forky's), or SchedMD's source built into a chroot (23.11, 25.05,
# 25.11: test/lab/source.sh, with LAB_SLURM_SOURCE). Reach them with `lab.sh run CMD`
# (or chroot DIR). LAB_CHROOT=1 runs 22.05 in a bookworm chroot too, on ports of its
# own, leaving the host's Slurm alone (test/package-test.sh installs the packages
# there). All can run at once. The lab never touches /dev/nvidia*: its fake GPUs are
# device nodes under /run/gpumem-lab/dev (of the chroot, for a chroot lab) with a
# major number reserved for local use, so even opening one reaches no driver.
set -euo pipefail

# Nothing the lab starts keeps a descriptor of its caller's, such as the lab lock (flock's
# fd): a daemon outliving the command, as munged does, would hold the lock for ever.
# 255 is bash's own, the script being read.
for fd in /proc/$$/fd/*; do
	fd=${fd##*/}
	if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ]; then
		eval "exec $fd>&-" 2>/dev/null || true
	fi
done

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
REL=${LAB_SLURM:-$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names --host)}
CHROOT_CACHE=${LAB_CHROOT_CACHE:-/var/cache/gpumem-lab}
HOST=$(hostname -s)
FAKE_MAJOR=120 # 120-127: "local/experimental use" in the kernel's device list
DEBIAN_PLUGINDIR=/usr/lib/x86_64-linux-gnu/slurm-wlm
# shellcheck source=test/lab/source.sh
. "$REPO/test/lab/source.sh"

# The release's row of the release table (internal/slurmrel/releases.txt): where its
# Slurm comes from, the lab's ports and auth, and its gates (SLURM_*; has_gate NAME). A
# release the table lacks is refused there, by name.
rel_row=$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release shell "$REL") || {
	echo "lab: LAB_SLURM=$REL: see above" >&2
	exit 2
}
eval "$rel_row"
has_gate() { [[ " $SLURM_GATES " == *" $1 "* ]]; }
SUITE=$SLURM_SUITE ports=$SLURM_PORTS PROM_PORT=$SLURM_PROM
# A release whose row names host ports is this machine's own Slurm where the machine is
# of its Debian suite (Debian 12's 22.05): the lab runs it on the host, on those ports and
# /etc/slurm, so plain srun/sbatch/squeue talk to it; LAB_CHROOT=1 runs it in a chroot.
# Every other release runs in a chroot of its own: Debian's packages of its suite, or
# SchedMD's source built into one (test/lab/source.sh).
host_suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
if [ -n "$SLURM_HOST_PORTS" ] && [ "${LAB_CHROOT:-0}" != 1 ] && [ "$host_suite" = "$SUITE" ]; then
	ROOT="" ports=$SLURM_HOST_PORTS PROM_PORT=$SLURM_HOST_PROM
elif [ "$SLURM_FROM" = source ]; then
	# The table's tag, or LAB_SLURM_TAG for another micro release of it; the root is named
	# by the micro release it holds.
	SRC_TAG=${LAB_SLURM_TAG:-$SLURM_TAG}
	[[ "$(source_version "$SRC_TAG")" == "$REL".* ]] || {
		echo "lab: LAB_SLURM_TAG=$SRC_TAG is not a tag of Slurm $REL (such as $SLURM_TAG)" >&2
		exit 2
	}
	ROOT=$CHROOT_CACHE/slurm-$(source_version "$SRC_TAG")
else
	ROOT=$CHROOT_CACHE/$SUITE
fi
CTLD_PORT=$((ports + 17)) SLURMD_PORT=$((ports + 18)) NODE_PORT0=$((ports + 31))
AUTH=auth/$SLURM_AUTH CRED=cred/$SLURM_AUTH
# Paths as the daemons see them (inside the chroot for 24.11); $ROOT$X on the host.
LAB=/var/lib/gpumem-lab/$REL
DEV=/run/gpumem-lab/dev
CONF=/etc/slurm
# What this lab keeps on the host: the release, and the suite where the host's own
# release runs in a chroot.
LAB_ID=$REL
[ -n "$SLURM_HOST_PORTS" ] && [ -n "$ROOT" ] && LAB_ID=$REL-$SUITE
STATE=$REPO/test/lab/.state/$LAB_ID

say() { echo "lab[$LAB_ID]: $*"; }
die() {
	echo "lab[$LAB_ID]: $*" >&2
	exit 1
}
if [ -n "${LAB_SLURMD_TIMEOUT:-}" ] && ! [[ "$LAB_SLURMD_TIMEOUT" =~ ^[1-9][0-9]{1,3}$ ]]; then
	die "LAB_SLURMD_TIMEOUT=$LAB_SLURMD_TIMEOUT: give slurm.conf's SlurmdTimeout in seconds, 10 to 9999"
fi

# lab_in runs a command in the lab's Slurm environment (the chroot for 24.11), as the
# controller runs it: a configless lab's slurm.conf is not where Slurm looks by default.
lab_in() {
	local e=()
	[ "${CONFIGLESS:-0}" = 1 ] && e=(env "SLURM_CONF=$CONF/slurm.conf")
	if [ -n "$ROOT" ]; then
		chroot "$ROOT" "${e[@]}" "$@"
	else
		"${e[@]}" "$@"
	fi
}

# shellcheck source=test/lab/nodes.sh
. "$REPO/test/lab/nodes.sh"
# shellcheck source=test/lab/chroot.sh
. "$REPO/test/lab/chroot.sh"
# shellcheck source=test/lab/gres.sh
. "$REPO/test/lab/gres.sh"
# shellcheck source=test/lab/accounting.sh
. "$REPO/test/lab/accounting.sh"
# shellcheck source=test/lab/prometheus.sh
. "$REPO/test/lab/prometheus.sh"
# shellcheck source=test/lab/configless.sh
. "$REPO/test/lab/configless.sh"
# shellcheck source=test/lab/fence.sh
. "$REPO/test/lab/fence.sh"
# shellcheck source=test/lab/backup-ctld.sh
. "$REPO/test/lab/backup-ctld.sh"
# shellcheck source=test/lab/daemons.sh
. "$REPO/test/lab/daemons.sh"

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pidfile_pid() { cat "$1" 2>/dev/null || true; }

daemon_pids() {
	local f pid
	{
		for f in "$ROOT$LAB"/run/*.pid; do
			[ -e "$f" ] || continue
			pid=$(pidfile_pid "$f")
			pid_alive "$pid" && echo "$pid"
		done
		bc_pids
		restarted_pids
	} | sort -un
	return 0
}

# restarted_pids: the lab's Slurm daemons that no pid file names. From 23.11 on,
# `scontrol reconfigure` makes slurmctld exec a new one (named slurmctld-wlm on Debian),
# and the pid file may still name the old; such a slurmctld outlived `down` and held the
# port, so the next lab talked to it. A daemon is the lab's when its program is this
# release's Slurm and its working folder (slurmctld's and slurmd's is their log folder)
# is in the lab's tree; an admin's Slurm daemons work elsewhere.
restarted_pids() {
	local p exe cwd
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case "${exe##*/}" in slurmctld* | slurmd | slurmd-wlm | slurmdbd*) ;; *) continue ;; esac
		[ "${exe%/*}" = "$ROOT/usr/sbin" ] || continue
		cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
		case "$cwd" in "$ROOT$LAB" | "$ROOT$LAB"/* | "$ROOT$LAB "*) echo "${p#/proc/}" ;; esac
	done
}

munge_ok() { lab_in sh -c 'munge -n | unmunge' >/dev/null 2>&1; }

# start_munge starts the release's munged (a chroot's own, with its own key and socket)
# unless one answers already; 24.11 on use auth/slurm.
start_munge() {
	[ "$AUTH" = auth/munge ] || return 0
	munge_ok && return 0
	[ -s "$ROOT/etc/munge/munge.key" ] || die "no $ROOT/etc/munge/munge.key: run test/lab/deps.sh"
	lab_in install -d -o munge -g munge -m 0755 /run/munge
	lab_in runuser -u munge -- /usr/sbin/munged
	# Remembered so that `down` stops only a munged the lab started itself.
	install -d "$ROOT$LAB/run"
	for _ in $(seq 50); do
		munge_ok && break
		sleep 0.1
	done
	pidfile_pid "$ROOT/run/munge/munged.pid" >"$ROOT$LAB/run/munged.started"
}

stop_munge() {
	[ "$AUTH" = auth/munge ] || return 0
	local f=$ROOT$LAB/run/munged.started pid
	[ -s "$f" ] || return 0
	pid=$(cat "$f")
	# A chrooted process's exe reads as a path under the chroot.
	if pid_alive "$pid" && [ "$(readlink /proc/"$pid"/exe)" = "$ROOT/usr/sbin/munged" ]; then
		kill "$pid"
	fi
	rm -f "$f"
}

poll() { # seconds, command...: whether the command succeeded within the time
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

wait_for() { # seconds, description, command...
	local secs=$1 what=$2
	shift 2
	poll "$secs" "$@" && return 0
	# A condition may say what it saw instead: a CI log often holds only this line.
	local why=
	if declare -F "${1}_why" >/dev/null; then why=$("${1}_why" 2>&1 | head -20) || true; fi
	die "timed out waiting for $what; see $ROOT$LAB/log/${why:+
$why}"
}

nodes_idle() {
	local out
	out=$(lab_in sinfo -h -N -o '%N %T' 2>/dev/null) || return 1
	[ "$(echo "$out" | sort -u | grep -c ' idle$')" -eq "${#LAB_NODES[@]}" ]
}

# start_slurmd starts node $1's slurmd as this lab runs it (a configless one with only
# the controller's address), and waits until it has written its pid file (at most 10 s).
# One at a time: with auth/slurm every slurmd of a host unlinks /run/slurm/sack.socket
# and binds its own there (src/plugins/auth/slurm/sack.c), and of two doing it at once
# one dies ("init_sack_conmgr: ... Unable to bind UNIX socket: Address already in
# use", seen on 26.05). The pid file comes after that bind.
start_slurmd() {
	local f=$ROOT$LAB/run/slurmd-$1.pid
	rm -f "$f"
	if cl_on; then
		lab_in env -u SLURM_CONF slurmd -N "$1" --conf-server "127.0.0.1:$CTLD_PORT"
	else
		# In the fence pass Slurm's cgroup/v2 on this hybrid host sees only the 0::
		# line (fence.sh).
		lab_in env "$(fence_preload)" slurmd -N "$1"
	fi
	poll 10 test -s "$f" || true
}

nodes_idle_why() {
	echo "what the controller says of its nodes:"
	lab_in sinfo -h -N -o '%N %T %E' | sort -u
	lab_in scontrol ping
	local f
	for f in "$ROOT$LAB"/log/slurmd*.log; do
		[ -f "$f" ] && grep -h -m3 -i 'error\|fatal' "$f" | sed "s|^|$(basename "$f"): |"
	done
}

fake_devices() {
	local d=$ROOT$DEV i
	# A real GPU's files are never ours to make or remove, even by accident.
	case "$d" in /dev/* | /dev) die "refusing to create fake GPUs in $d" ;; esac
	rm -rf "$d"
	install -d "$d/nvidia-caps"
	for i in 0 1 2 3 4 5 6 7; do
		mknod -m 0666 "$d/nvidia$i" c "$FAKE_MAJOR" "$i"
	done
	for i in $(seq 1 40); do
		mknod -m 0444 "$d/nvidia-caps/nvidia-cap$i" c "$((FAKE_MAJOR + 1))" "$i"
	done
}

plugin_dir() {
	# The lab keeps its own copy so that rebuilding bin/ never swaps a library that a
	# running slurmctld has mapped.
	local src=$REPO/bin
	if [ -n "$ROOT" ]; then
		src=$STATE/plugins
		if [ -x "$REPO/cgo/build.sh" ]; then
			mkdir -p "$src"
			# A source-built release's plugins read job records at offsets measured from
			# its own source tree (test/lab/source.sh keeps it in the root).
			local env=()
			[ -n "${SRC_TAG:-}" ] && env=(env "SLURM_SOURCE=$ROOT/usr/src/slurm")
			"${env[@]}" "$REPO/cgo/build.sh" "$src" "$ROOT/usr/include" >"$STATE/plugins-build.log" 2>&1 ||
				die "building the plugins against $REL headers failed; see $STATE/plugins-build.log"
		fi
	fi
	rm -rf "$ROOT$LAB/plugins"
	install -d "$ROOT$LAB/plugins"
	for so in job_submit_gpumem.so cli_filter_gpumem.so spank_gpumem.so; do
		[ -f "$src/$so" ] && install -m 0755 "$src/$so" "$ROOT$LAB/plugins/$so"
	done
	return 0
}

plugin_lines() {
	local js=${LAB_JOB_SUBMIT:-gpumem} cf=${LAB_CLI_FILTER:-gpumem}
	if [ "$js" = gpumem ] && [ ! -f "$ROOT$LAB/plugins/job_submit_gpumem.so" ]; then
		say "job_submit_gpumem.so not built (make build): running without job_submit" >&2
		js=none
	fi
	if [ "$cf" = gpumem ] && [ ! -f "$ROOT$LAB/plugins/cli_filter_gpumem.so" ]; then
		say "cli_filter_gpumem.so not built (make build): running without cli_filter" >&2
		cf=none
	fi
	[ "$js" != none ] && echo "JobSubmitPlugins=$js"
	[ "$cf" != none ] && echo "CliFilterPlugins=$cf"
	return 0
}

# The files the lab writes into $CONF; a machine's own copies are never overwritten.
LAB_FILES=(slurm.conf gres.conf gres.conf.prev job_submit.lua gpumem.conf gpumem.d cgroup.conf slurm.key slurmdbd.conf)
MARK=.gpumem-lab
BACKUP=$LAB/etc-backup

# lab_wrote says whether folder $1 (default $CONF) holds the lab's own files (or none at
# all): the lab marks what it writes, and knows the slurm.conf it rendered before it
# marked anything.
lab_wrote() {
	local etc=${1:-$ROOT$CONF} f
	[ -e "$etc/$MARK" ] && return 0
	head -1 "$etc/slurm.conf" 2>/dev/null | grep -q '^# The gpumem lab' && return 0
	for f in "${LAB_FILES[@]}"; do
		[ -e "$etc/$f" ] && return 1
	done
	return 0
}

# guard_conf stops the lab from overwriting a Slurm configuration it did not write in
# folder $1 (default $CONF): it refuses, or with LAB_BACKUP=1 moves the machine's files
# aside until `down`.
guard_conf() {
	local etc=${1:-$ROOT$CONF} f foreign=()
	lab_wrote "$etc" && return 0
	for f in "${LAB_FILES[@]}"; do
		[ -e "$etc/$f" ] && foreign+=("$f")
	done
	if [ "${LAB_BACKUP:-0}" != 1 ]; then
		die "refusing to overwrite ${foreign[*]} in $etc: the lab did not write them. Move them away, or run with LAB_BACKUP=1 to have the lab keep them in $ROOT$BACKUP and put them back at lab-down"
	fi
	[ -e "$ROOT$BACKUP" ] && die "$ROOT$BACKUP already holds a saved configuration: restore it into $etc first"
	install -d "$ROOT$BACKUP"
	for f in "${foreign[@]}"; do
		mv "$etc/$f" "$ROOT$BACKUP/"
	done
	say "moved this machine's ${foreign[*]} from $etc to $ROOT$BACKUP; lab.sh down puts them back"
}

# restore_conf puts back what guard_conf moved aside, once the lab's daemons are gone:
# the machine's own files come from $ETC_SLURM, whichever folder the lab used.
restore_conf() {
	local etc=$ROOT$ETC_SLURM f
	[ -d "$ROOT$BACKUP" ] || return 0
	for f in "${LAB_FILES[@]}" "$MARK"; do
		rm -rf "${etc:?}/$f"
	done
	for f in "$ROOT$BACKUP"/* "$ROOT$BACKUP"/.[!.]*; do
		[ -e "$f" ] && mv "$f" "$etc/"
	done
	rmdir "$ROOT$BACKUP"
	say "put this machine's Slurm configuration back in $etc"
}

render_conf() {
	local etc=$ROOT$CONF nodes parts plugins
	install -d "$etc" "$STATE"
	guard_conf
	echo "Slurm configuration written by gpumem's test/lab/lab.sh (LAB_SLURM=$REL)" >"$etc/$MARK"
	gres_nodes "$STATE/node-gres"
	nodes=$(node_lines "$STATE/node-gres")
	if cl_on; then
		# The nodes' Gres= are not known here: the controller's pull adds them to this
		# template's lines, in the file slurm.conf Includes.
		printf '%s\n' "$nodes" >"$etc/gpumem-nodes.conf.in"
		nodes=$(printf 'SlurmctldParameters=enable_configless\nInclude gpumem-nodes.conf')
	fi
	parts=$(partition_lines)
	plugins=$(plugin_lines)
	local f acct tres="" weights=""
	# GPU memory as the billing TRES: AccountingStorageTRES and each partition's
	# TRESBillingWeights come from `gpumemctl policy`, as an admin would get them. Its
	# settings are the flags (--config /dev/null): whatever gpumem.conf the machine holds,
	# the admin's or an older lab's, is not the lab's to read.
	if acct_on; then
		tres=$(lab_in "$LAB/bin/gpumemctl" policy --config /dev/null --inventory "$LAB/inv" --shard-types "$SHARD_TYPES" --print tres) ||
			die "gpumemctl policy --print tres failed"
		weights=$(lab_in "$LAB/bin/gpumemctl" policy --config /dev/null --inventory "$LAB/inv" --shard-types "$SHARD_TYPES" --print weights) ||
			die "gpumemctl policy --print weights failed"
		parts=$(printf '%s\n' "$parts" | sed "s|\$| TRESBillingWeights=\"$weights\"|")
	fi
	acct=$(acct_conf_lines "$tres")
	f=$(sed -e "s|@RELEASE@|$REL|; s|@CLUSTER@|gpumem${REL/./}|; s|@HOST@|$HOST|" \
		-e "s|@CTLD_PORT@|$CTLD_PORT|; s|@SLURMD_PORT@|$SLURMD_PORT|" \
		-e "s|@AUTH@|$AUTH|; s|@CRED@|$CRED|; s|@LAB@|$LAB|g" \
		-e "s|@PLUGINDIR@|$DEBIAN_PLUGINDIR:$LAB/plugins|" \
		"$REPO/slurm-conf/slurm.conf.lab.in")
	f=${f/@ACCOUNTING@/$acct}
	f=${f/@PLUGINS@/$plugins}
	f=${f/@FENCE@/$(fence_conf_lines)}
	f=${f/@PROCTRACK@/$(fence_proctrack)}
	f=${f/@TASK@/$(fence_task)}
	f=${f/@NODES@/$nodes}
	f=${f/@PARTITIONS@/$parts}
	f=${f/@SLURMD_TIMEOUT@/${LAB_SLURMD_TIMEOUT:+SlurmdTimeout=$LAB_SLURMD_TIMEOUT}}
	printf '%s\n' "$f" | bc_conf >"$etc/slurm.conf"
	# CgroupPlugin=disabled came with 24.05 (the cgroup-disabled gate); before it slurmd
	# loads a cgroup plugin in any case (test/lab/chroot.sh gives it the host's cgroup
	# filesystems; on the host it has them).
	if fence_on; then
		fence_cgroup_conf >"$etc/cgroup.conf"
	elif [ -n "$ROOT" ] && has_gate cgroup-disabled; then
		echo "CgroupPlugin=disabled" >"$etc/cgroup.conf"
	else
		rm -f "$etc/cgroup.conf"
	fi
	if [ "$AUTH" = auth/slurm ] && [ ! -s "$etc/slurm.key" ]; then
		(umask 077 && head -c 1024 /dev/urandom >"$etc/slurm.key")
	fi
	install -m 0644 "$REPO/slurm-conf/job_submit.lab.lua" "$etc/job_submit.lua"
	acct_render
	cl_on || gres_install
	gpumem_conf "$etc"
	fence_install
	return 0
}

cmd_up() {
	[ "$(id -u)" -eq 0 ] || die "the lab starts daemons and makes device nodes: run as root"
	[ -n "$ROOT" ] && chroot_ensure
	[ -z "$ROOT" ] && ! command -v slurmctld >/dev/null && die "Slurm is not installed: run test/lab/deps.sh"
	if [ -n "$SCALE" ]; then
		# The host's Slurm has one port range for the whole machine, and a cgroup plugin
		# for every node before CgroupPlugin=disabled.
		[ -n "$ROOT" ] && has_gate cgroup-disabled || die "LAB_SCALE runs on a chroot lab of a release with the cgroup-disabled gate: $(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names --ci | tr '\n' ' ')but not the host's"
		cl_on && die "LAB_SCALE with LAB_CONFIGLESS=1: the configless lab has three nodes"
		bc_on && die "LAB_SCALE with LAB_BACKUP_CTLD=1: not supported together"
	fi
	foreign_daemons
	[ -n "$(daemon_pids)" ] && say "already up: restarting"
	# Also after a start that failed half-way: whatever it left running goes first.
	# The machine's own configuration stays aside: this start writes the lab's again.
	LAB_KEEP_BACKUP=1 cmd_down >/dev/null
	cl_on && cl_clear_etc
	[ -n "$ROOT" ] && chroot_mount
	fence_prepare
	rm -rf "$ROOT$LAB"/{ctld,spool,log,run,backup-ctld}
	install -d "$ROOT$LAB"/{ctld,spool,log,run}
	fake_devices
	plugin_dir
	acct_check
	# munged before render_conf: gpumemd's gres check there runs slurmd -G, which from
	# 23.11 on makes a credential when its auth plugin starts (munge's needs munged).
	start_munge
	render_conf
	acct_start
	if cl_on; then
		cl_node_keys
		cl_gpumemd_up
		cl_pull
	fi
	lab_in env GPUMEM_CONF="$CONF/gpumem.conf" slurmctld -c -i
	if bc_on; then
		wait_for 30 "slurmctld" bc_primary_up
	else
		wait_for 30 "slurmctld" lab_in scontrol ping
	fi
	bc_up
	local n
	for n in "${LAB_NODES[@]}"; do
		start_slurmd "$n"
	done
	local secs=$((30 + ${#LAB_NODES[@]}))
	poll "$secs" nodes_idle || restart_unregistered "$secs"
	wait_for "$secs" "nodes to register idle" nodes_idle
	if cl_on; then
		cl_login_up
	else
		prom_up
	fi
	say "up: $(lab_in sinfo -h -o '%P:%N' | tr '\n' ' ')(logs in $ROOT$LAB/log)"
}

cmd_down() {
	[ "$(id -u)" -eq 0 ] || die "run as root"
	local pids pid
	pids=$(daemon_pids)
	if [ -n "$pids" ]; then
		# Jobs first, so that no slurmstepd outlives its slurmd.
		lab_in scancel --quiet --full --hurry -u root >/dev/null 2>&1 || true
		for _ in $(seq 50); do
			[ -z "$(lab_in squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
			sleep 0.1
		done
		for pid in $pids; do kill "$pid" 2>/dev/null || true; done
		for _ in $(seq 100); do
			pids=$(daemon_pids)
			[ -z "$pids" ] && break
			sleep 0.1
		done
		for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
	fi
	prom_down
	cl_down
	# A fault test may have mounted a small filesystem over the controller's state.
	if mountpoint -q "$ROOT$LAB/ctld" 2>/dev/null; then
		umount "$ROOT$LAB/ctld" 2>/dev/null || umount -l "$ROOT$LAB/ctld"
	fi
	stop_munge
	[ "${LAB_KEEP_BACKUP:-0}" = 1 ] || restore_conf
	[ -n "$ROOT" ] && [ -d "$ROOT" ] && chroot_umount
	rm -rf "$ROOT$DEV"
	say "down"
}

cmd_status() {
	local pids
	pids=$(daemon_pids)
	if [ -z "$pids" ]; then
		say "down"
		return 3
	fi
	say "up (pids $(echo "$pids" | tr '\n' ' '))"
	lab_in sinfo -N -o '%N %P %T %G' || true
	lab_in squeue || true
}

# cmd_submitter builds test/bench/submit.c against the lab's libslurm and prints its
# path as the lab sees it (run it with `lab.sh run PATH ...`).
cmd_submitter() {
	local src=$REPO/test/bench/submit.c out=$LAB/submit
	[ -n "$(daemon_pids)" ] || die "the lab is down: run lab.sh up first"
	if [ -n "$ROOT" ] && [ ! -x "$ROOT/usr/bin/gcc" ]; then
		chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get -qq -y install gcc libc6-dev >/dev/null ||
			die "installing gcc in the chroot failed"
	fi
	# Rebuilt whenever its source differs from the one built last: a lab's submitter is
	# shared by every checkout, and another's older source may have been built later.
	# It reads the release's gates from the table's header, copied beside it.
	local gates=$REPO/cgo/include/gpumem_gates.h
	if [ ! -x "$ROOT$out" ] || ! cmp -s "$src" "$ROOT$LAB/submit.c" || ! cmp -s "$gates" "$ROOT$LAB/gpumem_gates.h"; then
		cp "$src" "$ROOT$LAB/submit.c"
		cp "$gates" "$ROOT$LAB/gpumem_gates.h"
		lab_in gcc -O2 -Wall -I"$LAB" -o "$out" "$LAB/submit.c" -lslurm
	fi
	echo "$out"
}

case "${1:-}" in
up) cmd_up ;;
chroot) # only the release's Debian root (its Slurm headers for the packages), no daemons
	[ -z "$ROOT" ] || chroot_ensure ;;
submitter) cmd_submitter ;;
down) cmd_down ;;
status) cmd_status ;;
where) # where this release's lab lives, for the e2e tests: its root and Prometheus port
	printf 'root=%s\nprometheus=%s\nid=%s\n' "$ROOT" "$PROM_PORT" "$LAB_ID" ;;
run)
	shift
	lab_in "$@"
	;;
*)
	echo "usage: LAB_SLURM=RELEASE [LAB_CHROOT=1] $0 up|down|status|where|chroot|submitter|run CMD...  (RELEASE: $(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names | tr '\n' ' '))" >&2
	exit 2
	;;
esac
