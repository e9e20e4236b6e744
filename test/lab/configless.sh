# The configless lab (sourced by lab.sh; LAB_CONFIGLESS=1): slurmctld serves the
# configuration (SlurmctldParameters=enable_configless) and is the only one with a copy.
# Its files live in $LAB/etc, not /etc/slurm, so nothing else on the machine can read
# them: each slurmd starts with --conf-server and keeps what slurmctld sends in its spool's
# conf-cache; the clients (the e2e tests' srun, sbatch, salloc) find no /etc/slurm/slurm.conf
# and use the cache slurmd links at /run/slurm/conf, as on a compute node, or fetch it
# themselves with SLURM_CONF_SERVER, as on a login node. Each node's gpumemd is a daemon
# with its own directory and address (127.0.2.N, NodeAddr in slurm.conf) that writes the
# node's inventory there and serves it; `gpumemctl inventory pull` on the controller
# brings it into the plugins' InventoryPath, completes the nodes' NodeName lines with their
# Gres= into gpumem-nodes.conf (Included by slurm.conf, so Slurm ships it) and writes the
# cluster's gres.conf (shipped to each slurmd), as docs/install.md tells an admin to. The
# machine itself is also the login node: its gpumem.conf is $LAB/login/gpumem.conf (clients
# find it through GPUMEM_CONF, which test/e2e.sh sets) and its inventory is pulled from
# the nodes' gpumemd as a login node's is, with the nodes and addresses read from the
# slurm.conf slurmd cached.
CONFIGLESS=${LAB_CONFIGLESS:-0}
# The machine's own Slurm configuration folder: configless nodes and clients must find no
# slurm.conf there.
ETC_SLURM=/etc/slurm
if [ "$CONFIGLESS" = 1 ]; then
	CONF=$LAB/etc
	ACCOUNTING=0 # the submit tests need none, and slurmdbd.conf would be one more copy
	GPUMEMD_PORT=$((NODE_PORT0 + 9))
fi

cl_on() { [ "$CONFIGLESS" = 1 ]; }

# cl_addr is node $1's (an index) address: its own loopback address, for its gpumemd.
cl_addr() { echo "127.0.2.$(($1 + 1))"; }

# cl_clear_etc leaves no lab file in the machine's /etc/slurm (a foreign one stops the lab
# or, with LAB_BACKUP=1, is kept aside until down), so that nothing but slurmctld's answer
# can configure a node or a client.
cl_clear_etc() {
	local etc=$ROOT$ETC_SLURM f
	guard_conf "$etc"
	for f in "${LAB_FILES[@]}" "$MARK"; do
		rm -rf "${etc:?}/$f"
	done
}

# cl_node_keys gives the nodes and clients what configless Slurm never sends: the key
# auth/slurm signs with (24.11 and later; 22.05 uses munge's), in the machine's
# /etc/slurm as on any node, marked as the lab's so that a later lab may replace it.
cl_node_keys() {
	[ -s "$ROOT$CONF/slurm.key" ] || return 0
	install -d "$ROOT$ETC_SLURM"
	install -m 0600 "$ROOT$CONF/slurm.key" "$ROOT$ETC_SLURM/slurm.key"
	echo "Slurm auth key written by gpumem's test/lab/lab.sh (LAB_SLURM=$REL, configless)" >"$ROOT$ETC_SLURM/$MARK"
}

# cl_gpumemd_up starts each node's gpumemd, which writes only the node's inventory (in its
# own folder: there is no shared one) and serves it on the node's address.
cl_gpumemd_up() {
	local i n dir addr cmd
	for i in "${!LAB_NODES[@]}"; do
		n=${LAB_NODES[$i]} dir=$LAB/node/$n addr=$(cl_addr "$i")
		rm -rf "$ROOT$dir"
		install -d "$ROOT$dir"
		cat >"$ROOT$dir/gpumem.conf" <<-CONF
			# gpumemd of lab node $n (configless: no /etc/slurm here), written by test/lab/lab.sh.
			ShardUnit = 1GiB
			ShardTypes = $SHARD_TYPES
			SlurmConf = $dir/no-slurm.conf
			[gpumemd]
			NVML = fake:$LAB/nodes/$n.json
			NodeName = $n
			Listen = $addr:$GPUMEMD_PORT
			WriteInventory = yes
			InventoryDir = $dir/gpumem.d
			HistoryDB =
			HealthState =
		CONF
		# Not through lab_in: a node has no SLURM_CONF of the controller's.
		cmd=(env -u SLURM_CONF "$LAB/bin/gpumemd" --config "$dir/gpumem.conf")
		[ -n "$ROOT" ] && cmd=(chroot "$ROOT" "${cmd[@]}")
		setsid "${cmd[@]}" </dev/null >"$ROOT$LAB/log/gpumemd-$n.log" 2>&1 &
		echo $! >"$ROOT$LAB/run/gpumemd-$n.pid"
	done
}

# cl_pull runs the controller's pull until every node answered (their gpumemd may still
# be starting); the files it writes are slurmctld's.
cl_pull() {
	local log=$ROOT$LAB/log/inventory-pull.log end=$((SECONDS + 30))
	: >"$log"
	until cl_pull_once "$log"; do
		[ "$SECONDS" -lt "$end" ] || die "gpumemctl inventory pull did not get every node's inventory in 30s: $(tail -5 "$log")"
		sleep 0.5
	done
}

cl_pull_once() {
	lab_in "$LAB/bin/gpumemctl" inventory pull --config "$CONF/gpumem.conf" \
		--node-template "$CONF/gpumem-nodes.conf.in" --node-lines "$CONF/gpumem-nodes.conf" \
		--gres-conf "$CONF/gres.conf" --dev-prefix "$DEV" --url "http://{addr}:$GPUMEMD_PORT/inventory" \
		--timeout 2s >>"$1" 2>&1
}

# LOGIN is the login node's folder; clients read $LOGIN/gpumem.conf (GPUMEM_CONF).
LOGIN=$LAB/login

# cl_login_up gives the login node gpumem.conf (the controller's, with its own inventory
# folder) and pulls its inventory: what srun needs to translate a new allocation's
# gpu:mem for its step too.
cl_login_up() {
	rm -rf "$ROOT$LOGIN"
	install -d "$ROOT$LOGIN"
	sed -e "s|^InventoryPath = .*|InventoryPath = $LOGIN/gpumem.d|" -e "s|^SlurmConf = .*|SlurmConf = /run/slurm/conf/slurm.conf|" \
		"$ROOT$CONF/gpumem.conf" >"$ROOT$LOGIN/gpumem.conf"
	local cmd=(env -u SLURM_CONF "$LAB/bin/gpumemctl" inventory pull --config "$LOGIN/gpumem.conf" --url "http://{addr}:$GPUMEMD_PORT/inventory" --timeout 2s)
	[ -n "$ROOT" ] && cmd=(chroot "$ROOT" "${cmd[@]}")
	"${cmd[@]}" >"$ROOT$LAB/log/login-pull.log" 2>&1 || die "the login node's inventory pull failed: $(tail -5 "$ROOT$LAB/log/login-pull.log")"
}

# cl_down removes the link a configless slurmd made to its cache, when it is the lab's.
cl_down() {
	local link=$ROOT/run/slurm/conf
	if [ -L "$link" ]; then
		case "$(readlink "$link")" in "$LAB"/*) rm -f "$link" ;; esac
	fi
}
