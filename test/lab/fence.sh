# The lab's driver-fence hook (sourced by lab.sh): slurm.conf's Prolog and Epilog run
# `gpumemd prolog|epilog` as Slurm runs them on a real node, each node with its own
# gpumemd configuration ($LAB/fence/NODE.conf: its fake NVML, and a fake cgroup2 root
# in $LAB/fence/cgroup, since the lab's nodes run without Slurm's cgroup plugins). The
# fake nodes hold no fence until a test gives one the NVML functions and the root the
# dmem controller (test/e2e/fence_test.go); until then every prolog ends at once.

# fence_conf_lines prints the slurm.conf lines: RunInJob (24.05 and later) runs the
# prolog in the job's extern step, after the job's cgroup exists and before any step;
# 22.05 has no such flag and runs the prolog from slurmd, before the cgroup exists, so
# its nodes never say they fence by driver.
# The hook is opt-in (LAB_FENCE=1): with Contain,RunInJob every allocation waits for the
# extern step's prolog, and a full e2e run on 24.11 saw `salloc -N2` wait for its
# resource configuration for minutes, so the other passes run without it.
fence_conf_lines() {
	[ "${LAB_FENCE:-0}" = 1 ] || return 0
	echo "Prolog=$LAB/bin/gpumemd-prolog"
	echo "Epilog=$LAB/bin/gpumemd-epilog"
	[ "$REL" != 22.05 ] && echo "PrologFlags=Contain,RunInJob"
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
