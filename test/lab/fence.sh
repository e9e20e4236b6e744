# The lab's driver-fence hook (sourced by lab.sh): slurm.conf's Prolog and Epilog run
# `gpumemd prolog|epilog` as Slurm runs them on a real node, each node with its own
# gpumemd configuration ($LAB/fence/NODE.conf: its fake NVML, and a fake cgroup2 root
# in $LAB/fence/cgroup, since the lab's nodes run without Slurm's cgroup plugins). The
# fake nodes hold no fence until a test gives one the NVML functions and the root the
# dmem controller (test/e2e/fence_test.go); until then every prolog ends at once.

# fence_conf_lines prints the slurm.conf lines. 24.05 and later: RunInJob runs the
# Prolog in the job's extern step, after the job's cgroup exists and before any step.
# 22.05 has no such flag and runs the Prolog from slurmd before the cgroup exists, so
# there gpumem's SPANK plugin runs the hook in the extern step that Contain starts
# (cgo/spank/spank_gpumem.c), and checks each step before its tasks; no Prolog.
# The hook is opt-in (LAB_FENCE=1): with Contain every allocation waits for the extern
# step's setup, and a full e2e run on 24.11 saw `salloc -N2` wait for its resource
# configuration for minutes, so the other passes run without it.
fence_conf_lines() {
	[ "${LAB_FENCE:-0}" = 1 ] || return 0
	if [ "$REL" = 22.05 ]; then
		echo "PrologFlags=Contain"
		echo "PlugStackConfig=$LAB/fence/plugstack.conf"
	else
		echo "Prolog=$LAB/bin/gpumemd-prolog"
		echo "PrologFlags=Contain,RunInJob"
	fi
	echo "Epilog=$LAB/bin/gpumemd-epilog"
	return 0
}

# fence_install writes the hook scripts and each node's configuration.
fence_install() {
	local n s
	rm -rf "$ROOT$LAB/fence"
	install -d "$ROOT$LAB/fence/cgroup" "$ROOT$LAB/fence/state"
	for s in prolog epilog; do
		# slurmd gives its prolog SLURMD_NODENAME (and no PATH).
		printf '#!/bin/sh\nexec %s/bin/gpumemd %s --config "%s/fence/$SLURMD_NODENAME.conf"\n' "$LAB" "$s" "$LAB" >"$ROOT$LAB/bin/gpumemd-$s"
		chmod 0755 "$ROOT$LAB/bin/gpumemd-$s"
	done
	# %n is the node's name (slurmstepd's SLURMD_NODENAME), as in Slurm's own paths.
	echo "required $LAB/plugins/spank_gpumem.so $LAB/bin/gpumemd --config $LAB/fence/%n.conf" >"$ROOT$LAB/fence/plugstack.conf"
	for n in "${LAB_NODES[@]}"; do
		cat >"$ROOT$LAB/fence/$n.conf" <<-CONF
			ShardUnit = 1GiB
			SlurmConf = $CONF/slurm.conf
			[gpumemd]
			NVML = fake:$LAB/nodes/$n.json
			InventoryDir = $CONF/gpumem.d
			FenceCgroupRoot = $LAB/fence/cgroup
			FenceState = $LAB/fence/state
			FenceFailures = $LAB/fence/failures.log
		CONF
	done
}
