# A private slurmctld for the submit benchmark (sourced by submit.sh). It has its own
# config folder, ports, state, logs, fake devices and munged socket, so a benchmark never
# restarts or slows the lab that the end-to-end tests use. No slurmd runs: the submitter's
# jobs are held, so the controller's submit path is all that is measured.
#
# Needs REPO, REL (22.05, 24.11 or 26.05) and BENCH (a folder of its own) set by the
# caller. 22.05 is the host's Slurm; 24.11 runs Debian trixie's and 26.05 Debian forky's
# from a private copy of the lab's chroot of that release (the lab's own is never
# written to).

BENCH_CTLD_PORT=${BENCH_CTLD_PORT:-7817}
BENCH_FAKE_MAJOR=120 # as the lab: "local/experimental use", no driver behind it

bench_die() {
	echo "bench: $*" >&2
	exit 1
}

# bench_in runs a command where the benchmark's Slurm lives (its chroot for 24.11 and
# 26.05).
bench_in() {
	if [ -n "$BROOT" ]; then
		chroot "$BROOT" env SLURM_CONF="$BETC/slurm.conf" "$@"
	else
		env SLURM_CONF="$BETC/slurm.conf" "$@"
	fi
}

# bench_setup lays out $BENCH once per run: paths as the daemons see them ($B...) and
# on the host ($BROOT$B...).
bench_setup() {
	# Another slurmctld on the port would answer this benchmark's clients instead of ours.
	if ss -Hltn "sport = :$BENCH_CTLD_PORT" 2>/dev/null | grep -q .; then
		bench_die "port $BENCH_CTLD_PORT is taken (another benchmark running?): $(ss -Hltnp "sport = :$BENCH_CTLD_PORT" | head -n 1)"
	fi
	BROOT=""
	# The lab's root of the release: "" where it is the host's own Slurm.
	local src
	src=$(LAB_SLURM=$REL "$REPO/test/lab/lab.sh" where | sed -n 's/^root=//p')
	if [ -n "$src" ]; then
		[ -x "$src/usr/sbin/slurmctld" ] || bench_die "no chroot at $src: make it once (LAB_SLURM=$REL test/lab/lab.sh chroot)"
		BROOT=$BENCH/root
		if [ ! -x "$BROOT/usr/sbin/slurmctld" ]; then
			mkdir -p "$BROOT"
			# -x: a lab that is up has /proc, /sys and /dev mounted in its chroot.
			cp -ax "$src/." "$BROOT/"
			mkdir -p "$BROOT/proc" "$BROOT/dev"
		fi
		mountpoint -q "$BROOT/proc" || mount --bind /proc "$BROOT/proc"
		mountpoint -q "$BROOT/dev" || mount --bind /dev "$BROOT/dev"
	fi
	B=/var/lib/gpumem-bench BETC=/var/lib/gpumem-bench/etc
	[ -z "$BROOT" ] && B=$BENCH/run BETC=$BENCH/run/etc
	# On tmpfs: slurmctld writes each batch job's script and environment into its state
	# folder, and on a disk filesystem creating those files (ext4 scanning recently
	# deleted inodes after the last round's cleanup) costs more CPU than the whole
	# submit path and varies from round to round.
	mountpoint -q "$BROOT$B" && umount "$BROOT$B"
	rm -rf "$BROOT$B"
	install -d "$BROOT$B"
	mount -t tmpfs -o size=2g,mode=0755 gpumem-bench "$BROOT$B"
	install -d "$BROOT$B"/{etc,ctld,log,run,dev/nvidia-caps,inv,node-gres,plugins,bin}
	local i
	for i in 0 1 2 3 4 5 6 7; do mknod -m 0666 "$BROOT$B/dev/nvidia$i" c "$BENCH_FAKE_MAJOR" "$i"; done
	for i in $(seq 1 40); do mknod -m 0444 "$BROOT$B/dev/nvidia-caps/nvidia-cap$i" c "$((BENCH_FAKE_MAJOR + 1))" "$i"; done
	bench_plugins
	bench_gres_nodes
}

# bench_plugins builds the plugin for the benchmark's release (22.05: bin/'s copy, or
# BENCH_PLUGINS's).
bench_plugins() {
	if [ -n "$BROOT" ]; then
		"$REPO/cgo/build.sh" "$BROOT$B/plugins" "$BROOT/usr/include" >"$BROOT$B/log/build.log" 2>&1 ||
			bench_die "building the plugins for $REL failed; see $BROOT$B/log/build.log"
	else
		local so=${BENCH_PLUGINS:-$REPO/bin}/job_submit_gpumem.so
		[ -f "$so" ] || bench_die "$so is not built: make build"
		install -m 0755 "$so" "$B/plugins/"
	fi
}

# bench_gres_nodes makes the lab's three nodes' inventories and Gres= as the lab does
# (test/lab/gres.sh): gpumemd --once reads each fake node file (nodes/) as it reads NVML
# on a real node and writes that node's inventory into inv/, the folder the plugin and
# gpumemctl read strictly; gpumemctl turns inv/ into slurm.conf's Gres= values. The
# fake node files themselves never go into inv/: they are not inventories.
bench_gres_nodes() {
	local b n err
	for b in gpumemd gpumemctl; do
		[ -x "$REPO/bin/$b" ] || bench_die "bin/$b is not built: make build"
		install -m 0755 "$REPO/bin/$b" "$BROOT$B/bin/$b"
	done
	install -d "$BROOT$B/nodes"
	cp "$REPO"/test/lab/nodes/*.json "$BROOT$B/nodes/"
	printf 'ShardUnit = 1GiB\n' >"$BROOT$B/gpumemd.conf"
	for n in n1 n2 n3; do
		err=$(bench_in "$B/bin/gpumemd" --once --config "$B/gpumemd.conf" --nvml="fake:$B/nodes/$n.json" --node "$n" \
			--dev-prefix "$B/dev" --write-inventory --inventory-dir "$B/inv" 2>&1) ||
			bench_die "gpumemd --once could not read fake node $n: $err"
	done
	err=$(bench_in "$B/bin/gpumemctl" gres generate --config "$B/gpumemd.conf" --inventory "$B/inv" \
		--node-gres "$B/node-gres" --dev-prefix "$B/dev" --out - 2>&1 >/dev/null) ||
		bench_die "gpumemctl gres generate --node-gres failed: $err"
}

# bench_conf writes slurm.conf for one mode (none, gpumem or lua), gres.conf, the
# plugin's inventory and gpumem.conf, and job_submit.lua.
bench_conf() {
	local mode=$1 auth=auth/munge cred=cred/munge authinfo="AuthInfo=socket=$B/munge/munge.socket" plugdir
	if [ -n "$BROOT" ]; then
		auth=auth/slurm cred=cred/slurm authinfo=""
		(umask 077 && head -c 1024 /dev/urandom >"$BROOT$BETC/slurm.key")
		echo "CgroupPlugin=disabled" >"$BROOT$BETC/cgroup.conf"
	fi
	plugdir=/usr/lib/x86_64-linux-gnu/slurm-wlm:${BENCH_PLUGDIR:-$B/plugins}
	local n i=0 nodes=""
	for n in n1 n2 n3; do
		nodes+="NodeName=$n NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 Port=$((BENCH_CTLD_PORT + 20 + i)) CPUs=16 RealMemory=64000 Gres=$(cat "$BROOT$B/node-gres/$n") State=UNKNOWN"$'\n'
		i=$((i + 1))
	done
	cat >"$BROOT$BETC/slurm.conf" <<-CONF
		ClusterName=gpumembench
		SlurmctldHost=$(hostname -s)(127.0.0.1)
		SlurmctldPort=$BENCH_CTLD_PORT
		SlurmdPort=$((BENCH_CTLD_PORT + 1))
		SlurmUser=root
		SlurmdUser=root
		AuthType=$auth
		CredType=$cred
		$authinfo
		StateSaveLocation=$B/ctld
		SlurmdSpoolDir=$B/spool/%n
		SlurmctldPidFile=$B/run/slurmctld.pid
		SlurmdPidFile=$B/run/slurmd-%n.pid
		SlurmctldLogFile=$B/log/slurmctld.log
		SlurmctldDebug=info
		PluginDir=$plugdir
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		SlurmdParameters=config_overrides
		GresTypes=gpu,shard
		MpiDefault=none
		SchedulerType=sched/backfill
		SchedulerParameters=bf_interval=1,bf_continue
		AccountingStorageType=accounting_storage/none
		JobCompType=jobcomp/none
		MaxJobCount=100000
		MinJobAge=5
		$([ "$mode" != none ] && echo "JobSubmitPlugins=$mode")
		$nodes
		PartitionName=gpu Nodes=n1,n2,n3 Default=YES DefaultTime=60 MaxTime=INFINITE State=UP
		PartitionName=train Nodes=n1,n2 DefaultTime=60 MaxTime=INFINITE State=UP
		PartitionName=inference Nodes=n3 DefaultTime=60 MaxTime=INFINITE State=UP
	CONF
	install -m 0644 "$REPO/slurm-conf/job_submit.lab.lua" "$BROOT$BETC/job_submit.lua"
	rm -rf "$BROOT$BETC/gpumem.d"
	bench_in env PATH=/usr/bin:/bin "$B/bin/gpumemctl" gres generate --inventory "$B/inv" --slurm-conf "$BETC/slurm.conf" \
		--inventory-out "$BETC/gpumem.d" --dev-prefix "$B/dev" --out "$BETC/gres.conf" >"$BROOT$B/log/gres-generate.log" 2>&1 ||
		bench_die "gpumemctl gres generate failed: $(cat "$BROOT$B/log/gres-generate.log")"
	# The plugin's usage snapshot and refusal counts on the benchmark's tmpfs too: never
	# the host's /var/lib/gpumem, which a real gpumem there may own.
	cat >"$BROOT$BETC/gpumem.conf" <<-CONF
		ShardUnit = 1GiB
		PlacementPolicy = first-fit
		PreferMIG = ${BENCH_PREFER_MIG:-no}
		InventoryPath = $BETC/gpumem.d
		SlurmConf = $BETC/slurm.conf
		OnError = open
		LogLevel = error
		ReloadInterval = 2s
		UsageSnapshot = $B/run/usage.json
		RefusalCounts = $B/run/refusals.json
	CONF
}

# bench_munge starts a munged of our own on its own socket (22.05 only).
bench_munge() {
	[ -n "$BROOT" ] && return 0
	[ -s "$B/run/munged.pid" ] && kill -0 "$(cat "$B/run/munged.pid")" 2>/dev/null && return 0
	install -d -o munge -g munge -m 0755 "$B/munge"
	runuser -u munge -- /usr/sbin/munged --socket="$B/munge/munge.socket" --pid-file="$B/munge/munged.pid" \
		--log-file="$B/munge/munged.log" --seed-file="$B/munge/munged.seed" --num-threads=4
	local _
	for _ in $(seq 50); do [ -s "$B/munge/munged.pid" ] && break; sleep 0.1; done
	cp "$B/munge/munged.pid" "$B/run/munged.pid"
}

# bench_ctld_up (re)starts the private slurmctld in MODE with empty state.
bench_ctld_up() {
	local mode=$1
	bench_ctld_down
	rm -rf "$BROOT$B/ctld" && install -d "$BROOT$B/ctld"
	bench_conf "$mode"
	bench_munge
	bench_in env GPUMEM_CONF="$BETC/gpumem.conf" ${BENCH_CTLD_ENV:-} slurmctld -c -i
	local _
	for _ in $(seq 300); do
		bench_in scontrol ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	bench_die "private slurmctld did not answer; see $BROOT$B/log/slurmctld.log"
}

bench_ctld_pid() { cat "$BROOT$B/run/slurmctld.pid"; }

bench_ctld_down() {
	local pid _
	pid=$(cat "$BROOT$B/run/slurmctld.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || return 0
	# Under callgrind the shutdown takes seconds; a port still held fails the next start.
	for _ in $(seq 300); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}

# bench_teardown stops everything bench_setup and bench_ctld_up started.
bench_teardown() {
	bench_ctld_down
	local pid
	pid=$(cat "$BROOT$B/run/munged.pid" 2>/dev/null) && kill "$pid" 2>/dev/null
	local _
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	umount "$BROOT$B" 2>/dev/null || true
	if [ -n "$BROOT" ]; then
		umount "$BROOT/proc" 2>/dev/null || true
		umount "$BROOT/dev" 2>/dev/null || true
	fi
	return 0
}

# bench_submitter builds submit.c against the benchmark's libslurm; prints its path.
bench_submitter() {
	if [ -n "$BROOT" ] && [ ! -x "$BROOT/usr/bin/gcc" ]; then
		chroot "$BROOT" env DEBIAN_FRONTEND=noninteractive apt-get -qq -y install gcc libc6-dev >/dev/null ||
			bench_die "installing gcc in the chroot failed"
	fi
	cp "$REPO/test/bench/submit.c" "$BROOT$B/submit.c"
	cp "$REPO/cgo/include/gpumem_gates.h" "$BROOT$B/gpumem_gates.h" # the release's gates
	bench_in gcc -O2 -Wall -I"$B" -o "$B/submit" "$B/submit.c" -lslurm || bench_die "building submit.c failed"
	echo "$B/submit"
}

# bench_callgrind prints slurmctld's instructions per job in MODE: N jobs (8 processes)
# counted by callgrind after a warm-up, which instruction counts make stable under any
# load. 22.05 only: the chroot has no valgrind.
bench_callgrind() {
	local mode=$1 submitter=$2 tres=$3 per=$((${BENCH_CALLGRIND_JOBS:-1000} / 8)) pid _ f
	[ -z "$BROOT" ] || bench_die "callgrind runs on the host's own Slurm only"
	command -v valgrind >/dev/null || bench_die "no valgrind: apt-get install valgrind"
	bench_ctld_down
	rm -rf "$B/ctld" "$B/log"/cg.* "$B/log"/callgrind-* && install -d "$B/ctld"
	bench_conf "$mode"
	bench_munge
	# The Go runtime's start in the plugin now and then spins forever under valgrind's
	# default scheduler (one thread at a time, unfair); fair scheduling and no
	# signal-based preemption let it through, and a stuck start is tried again.
	local try vg
	for try in 1 2 3; do
		env SLURM_CONF="$BETC/slurm.conf" GPUMEM_CONF="$BETC/gpumem.conf" GODEBUG=asyncpreemptoff=1 \
			valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$B/log/cg.%p" \
			slurmctld -D -c -i >"$B/log/callgrind-$try.log" 2>&1 &
		vg=$!
		for _ in $(seq 1200); do
			bench_in scontrol ping >/dev/null 2>&1 && break 2
			kill -0 "$vg" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$vg" 2>/dev/null || true
		wait "$vg" 2>/dev/null || true
	done
	bench_in scontrol ping >/dev/null 2>&1 ||
		bench_die "slurmctld under callgrind did not answer: $(grep -hiE 'fatal|error' "$B"/log/callgrind-*.log | head -n 5)"
	pid=$(bench_ctld_pid)
	bench_in "$submitter" 2 50 "$tres" >/dev/null
	callgrind_control -z "$pid" >/dev/null 2>&1
	bench_in "$submitter" 8 "$per" "$tres" >/dev/null || bench_die "$mode under callgrind refused jobs"
	callgrind_control -d "$pid" >/dev/null 2>&1
	f=$(ls -t "$B/log/cg.$pid".* | head -1)
	awk -v n=$((8 * per)) '/^(summary|totals):/ {print $2 / n; exit}' "$f"
	bench_ctld_down
}
