# gres.conf, node Gres= and gpumem.conf for the lab (sourced by lab.sh), all made by
# the project's own `gpumemctl gres generate` from the fake node files in
# test/lab/nodes/, as an admin would from NVML. gpumemctl runs where the lab's Slurm is
# (inside the chroot for 24.11), so that slurmd -G of that release validates the result.

# gpumemctl_in runs the lab's copy of bin/gpumemctl in the lab's environment.
gpumemctl_in() { lab_in "$LAB/bin/gpumemctl" "$@"; }

# gres_nodes writes each node's inventory to $LAB/inv/NODE.json and its slurm.conf Gres=
# to $1/NODE (on the host), before slurm.conf exists.
gres_nodes() {
	local out=$1 n
	[ -x "$REPO/bin/gpumemctl" ] || die "bin/gpumemctl is not built: run make build"
	rm -rf "$ROOT$LAB"/{bin,nodes,inv,node-gres}
	install -d "$ROOT$LAB"/{bin,nodes,inv,node-gres}
	install -m 0755 "$REPO/bin/gpumemctl" "$ROOT$LAB/bin/gpumemctl"
	cp "$REPO"/test/lab/nodes/*.json "$ROOT$LAB/nodes/"
	for n in "${LAB_NODES[@]}"; do
		gpumemctl_in gres generate --nvml="fake:$LAB/nodes/$n.json" --node "$n" \
			--inventory-out "$LAB/inv" --node-gres "$LAB/node-gres" --dev-prefix "$DEV" --out - >/dev/null ||
			die "gpumemctl gres generate failed for node $n"
	done
	rm -rf "$out"
	cp -r "$ROOT$LAB/node-gres" "$out"
}

# gres_install writes gres.conf and the plugins' inventory (with slurm.conf's
# partitions) once slurm.conf is in place; slurmd -G must accept the gres.conf.
gres_install() {
	rm -rf "$ROOT$CONF/gpumem.d" "$ROOT$CONF/gres.conf"
	install -d "$ROOT$CONF/gpumem.d"
	lab_in "$LAB/bin/gpumemctl" gres generate --inventory "$LAB/inv" --slurm-conf "$CONF/slurm.conf" \
		--inventory-out "$CONF/gpumem.d" --dev-prefix "$DEV" --out "$CONF/gres.conf" >"$ROOT$LAB/log/gres-generate.log" 2>&1 ||
		die "gpumemctl gres generate refused the lab's gres.conf: $(cat "$ROOT$LAB/log/gres-generate.log")"
}

# gpumem_conf writes the plugins' gpumem.conf into $1.
gpumem_conf() {
	cat >"$1/gpumem.conf" <<-CONF
		# gpumem lab configuration, written by test/lab/lab.sh.
		ShardUnit = 1GiB
		Policy = ${LAB_POLICY:-first-fit}
		PreferMIG = yes
		InventoryPath = $CONF/gpumem.d
		SlurmConf = $CONF/slurm.conf
		OnError = open
		LogLevel = error
		ReloadInterval = 2s
	CONF
}
