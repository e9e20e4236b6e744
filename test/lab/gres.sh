# gres.conf, node Gres= and gpumem.conf for the lab (sourced by lab.sh). Each node's
# inventory and the lab's gres.conf come from the node sidecar, `gpumemd --once`, run on
# the fake node files in test/lab/nodes/ as it runs on a real node from NVML; gpumemctl
# only turns that inventory into slurm.conf's Gres= lines, as an admin would. Both run
# where the lab's Slurm is (inside the chroot for 24.11), so gres.conf is written for that
# release and slurmd -G of that release must accept it.

# LAB_SHARD_TYPES=per-gpu gives each shared GPU's shards a Type of their own
# (gpumem.conf ShardTypes, docs/steering.md).
SHARD_TYPES=${LAB_SHARD_TYPES:-none}

# gpumemd_once runs the lab's copy of bin/gpumemd once for node $1, in the lab's
# environment, with 1 GiB shards and the lab's slurm.conf.
gpumemd_once() {
	local n=$1
	shift
	lab_in env "$(fence_preload)" "$LAB/bin/gpumemd" --once --config "$LAB/gpumemd.conf" --nvml="fake:$LAB/nodes/$n.json" \
		--node "$n" --dev-prefix "$DEV" "$@"
}

# gres_nodes writes each node's inventory to $LAB/inv/NODE.json and its slurm.conf Gres=
# to $1/NODE (on the host), before slurm.conf exists.
gres_nodes() {
	local out=$1 n b err
	for b in gpumemd gpumemctl; do
		[ -x "$REPO/bin/$b" ] || die "bin/$b is not built: run make build"
	done
	rm -rf "$ROOT$LAB"/{bin,nodes,inv,node-gres}
	install -d "$ROOT$LAB"/{bin,nodes,inv,node-gres}
	install -m 0755 "$REPO/bin/gpumemd" "$REPO/bin/gpumemctl" "$ROOT$LAB/bin/"
	# gpumemd --mig-reload in the MIG e2e tests: what an admin's reload does, on the lab's slurm.conf.
	install -m 0755 "$REPO/test/lab/mig-reload.sh" "$ROOT$LAB/bin/mig-reload"
	# The gates of the lab's release, for it (it runs in the lab's root, without the repository).
	echo "$SLURM_GATES" >"$ROOT$LAB/bin/mig-reload.gates"
	if [ -n "$SCALE" ]; then
		scale_node_files "$ROOT$LAB/nodes"
	else
		cp "$REPO"/test/lab/nodes/*.json "$ROOT$LAB/nodes/"
	fi
	printf 'ShardUnit = 1GiB\nSlurmConf = %s\nShardTypes = %s\n' "$CONF/slurm.conf" "$SHARD_TYPES" >"$ROOT$LAB/gpumemd.conf"
	if cl_on; then # the nodes' gpumemd and the controller's pull do the rest
		rm -rf "$out"
		return 0
	fi
	for n in "${LAB_NODES[@]}"; do
		err=$(gpumemd_once "$n" --write-inventory --inventory-dir "$LAB/inv" 2>&1) ||
			die "gpumemd --once could not read fake node $n: $err"
	done
	if [ "$SHARD_TYPES" = none ]; then
		lab_in "$LAB/bin/gpumemctl" gres generate --config "$LAB/gpumemd.conf" --inventory "$LAB/inv" --node-gres "$LAB/node-gres" \
			--dev-prefix "$DEV" --out - >/dev/null || die "gpumemctl gres generate --node-gres failed"
	else
		# Typed shards: the Gres= lines gpumemd itself writes into gres.conf's comments,
		# rendered before slurm.conf exists (so without a slurmd -G check).
		printf 'ShardUnit = 1GiB\nSlurmConf = %s\nShardTypes = %s\n' "$LAB/none/slurm.conf" "$SHARD_TYPES" >"$ROOT$LAB/gpumemd-nodes.conf"
		err=$(lab_in "$LAB/bin/gpumemd" --once --config "$LAB/gpumemd-nodes.conf" --nvml="fake:$LAB/nodes/${LAB_NODES[0]}.json" \
			--node "${LAB_NODES[0]}" --dev-prefix "$DEV" --write-inventory --inventory-dir "$LAB/inv" \
			--write-gres --gres-conf "$LAB/gres-nodes.conf" 2>&1) || die "gpumemd --once (typed shards) failed: $err"
		sed -n 's/^# slurm.conf: NodeName=\([^ ]*\) Gres=\(.*\)$/\1 \2/p' "$ROOT$LAB/gres-nodes.conf" |
			while read -r n g; do echo "$g" >"$ROOT$LAB/node-gres/$n"; done
	fi
	rm -rf "$out"
	cp -r "$ROOT$LAB/node-gres" "$out"
}

# gres_install has gpumemd write gres.conf and the plugins' inventory (with slurm.conf's
# partitions) once slurm.conf is in place, node by node into the shared /etc/slurm, as
# each node's sidecar would; slurmd -G must accept each node's gres.conf.
gres_install() {
	local n log=$ROOT$LAB/log/gres-generate.log
	rm -rf "$ROOT$CONF/gpumem.d" "$ROOT$CONF/gres.conf" "$ROOT$CONF/gres.conf.prev"
	install -d "$ROOT$CONF/gpumem.d"
	: >"$log"
	for n in "${LAB_NODES[@]}"; do
		gpumemd_once "$n" --write-inventory --inventory-dir "$CONF/gpumem.d" \
			--write-gres --gres-conf "$CONF/gres.conf" >>"$log" 2>&1 ||
			die "gpumemd --once refused the lab's gres.conf for node $n: $(cat "$log")"
	done
	rm -f "$ROOT$CONF/gres.conf.prev"
}

# gpumem_conf writes the plugins' gpumem.conf into $1.
gpumem_conf() {
	cat >"$1/gpumem.conf" <<-CONF
		# gpumem lab configuration, written by test/lab/lab.sh.
		ShardUnit = 1GiB
		PlacementPolicy = ${LAB_POLICY:-first-fit}
		PreferMIG = yes
		InventoryPath = $CONF/gpumem.d
		SlurmConf = $CONF/slurm.conf
		OnError = open
		LogLevel = error
		ReloadInterval = 2s
		ShardTypes = $SHARD_TYPES
		PinPolicy = ${LAB_PIN_POLICY:-gpumem}
		UsageSnapshot = $LAB/usage.json
		RefusalCounts = $LAB/refusals.json
	CONF
}
