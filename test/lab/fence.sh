# The lab's driver-fence pass (sourced by lab.sh, LAB_FENCE=1): slurm.conf's Prolog
# and Epilog run `gpumemd prolog|epilog` as Slurm runs them on a real node, each node
# with its own gpumemd configuration ($LAB/fence/NODE.conf, its fake NVML), and Slurm's
# own cgroup/v2 plugin (proctrack/cgroup, task/cgroup) makes every job, step and
# extern-step directory on this host's real cgroup2 hierarchy and moves the real
# processes there. The one stand-in: these hosts mount cgroup2 at
# /sys/fs/cgroup/unified beside the v1 controllers, which Slurm's cgroup/v2 refuses
# ("Hybrid mode is not supported"), so slurmd runs with procview.so preloaded, which
# shows it only the 0:: line of /proc/PID/cgroup (test/lab/cgroupv2/procview.c). In
# the chroot labs the cgroup2 hierarchy is bound at the chroot's /sys/fs/cgroup, as on
# a pure v2 node; the host's 22.05 lab names it by CgroupMountpoint. The fake nodes
# hold no fence until a test gives one the NVML functions (test/e2e/fence_test.go);
# until then every prolog ends at once.

fence_on() { [ "${LAB_FENCE:-0}" = 1 ]; }

# fence_cgroup_root is the cgroup2 mount as the lab's Slurm and gpumemd see it.
fence_cgroup_root() {
	if [ -n "$ROOT" ]; then echo /sys/fs/cgroup; else echo /sys/fs/cgroup/unified; fi
}

fence_proctrack() { if fence_on; then echo proctrack/cgroup; else echo proctrack/linuxproc; fi; }
fence_task() { if fence_on; then echo task/cgroup; else echo task/none; fi; }

# fence_cgroup_conf is the fence pass's cgroup.conf: Slurm's cgroup/v2 without systemd
# (the lab's slurmd are not systemd units), plus LAB_CGROUP_CONF's lines (a test's
# CgroupSlice= or 26.05's job-id naming).
fence_cgroup_conf() {
	echo "# Written by gpumem's test/lab/lab.sh for the fence pass."
	echo "CgroupPlugin=cgroup/v2"
	echo "IgnoreSystemd=yes"
	[ -z "$ROOT" ] && echo "CgroupMountpoint=$(fence_cgroup_root)"
	[ -n "${LAB_CGROUP_CONF:-}" ] && printf '%b\n' "$LAB_CGROUP_CONF"
	return 0
}

# fence_prepare binds the host's cgroup2 hierarchy at a chroot's /sys/fs/cgroup, where
# Slurm's cgroup/v2 and gpumemd look for it on a pure v2 node, and builds procview.so.
fence_prepare() {
	fence_on || return 0
	mountpoint -q /sys/fs/cgroup/unified || die "the fence pass needs cgroup2 at /sys/fs/cgroup/unified"
	if [ -n "$ROOT" ]; then
		mountpoint -q "$ROOT/sys/fs/cgroup" && umount -R "$ROOT/sys/fs/cgroup"
		mount --bind /sys/fs/cgroup/unified "$ROOT/sys/fs/cgroup" ||
			die "cannot bind /sys/fs/cgroup/unified at $ROOT/sys/fs/cgroup"
	fi
	install -d "$ROOT$LAB/lib"
	lab_in gcc -shared -fPIC -O2 -o "$LAB/lib/procview.so" -x c - -ldl <"$REPO/test/lab/cgroupv2/procview.c" ||
		die "cannot build the lab's procview.so"
	# Slurm's cgroup/v2 without systemd puts its scopes in system.slice (26.05: the
	# CgroupSlice), which it expects to exist, as on a systemd host.
	local slice
	slice=$(printf '%b\n' "${LAB_CGROUP_CONF:-}" | sed -n 's/^CgroupSlice=//p')
	install -d "$ROOT$(fence_cgroup_root)/${slice:-system.slice}"
}

# fence_preload is the environment under which the lab runs what runs slurmd (slurmd
# itself, and gpumemd's gres check, slurmd -G) in the fence pass.
fence_preload() {
	if fence_on; then echo "LD_PRELOAD=$LAB/lib/procview.so"; else echo "GPUMEM_LAB=1"; fi
}

# fence_conf_lines prints the slurm.conf lines. 24.05 and later: RunInJob runs the
# Prolog in the job's extern step, after the job's cgroup exists and before any step.
# 22.05 has no such flag and runs the Prolog from slurmd before the cgroup exists, so
# there gpumem's SPANK plugin runs the hook in the extern step that Contain starts
# (cgo/spank/spank_gpumem.c), and checks each step before its tasks; no Prolog.
# The hook is opt-in (LAB_FENCE=1): with Contain every allocation waits for the extern
# step's setup, and a full e2e run on 24.11 saw `salloc -N2` wait for its resource
# configuration for minutes, so the other passes run without it.
fence_conf_lines() {
	fence_on || return 0
	if ! has_gate prolog-runinjob; then
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
	install -d "$ROOT$LAB/fence/state"
	install -m 0644 /dev/null "$ROOT$LAB/fence/hooks.log"
	for s in prolog epilog; do
		# slurmd gives its prolog SLURMD_NODENAME (and no PATH), and drops what it prints:
		# the lab keeps it, a line per hook, for a failed test to show. A hook Slurm
		# starts with the job user's ids (cmd/gpumemd/hookroot.go) cannot write there and
		# logs nothing; it must still run.
		printf '#!/bin/sh\nlog=%s/fence/hooks.log\n[ -w "$log" ] || log=/dev/null\necho "$(date +%%T.%%N) %s job $SLURM_JOB_ID on $SLURMD_NODENAME" >>"$log"\nexec %s/bin/gpumemd %s --config "%s/fence/$SLURMD_NODENAME.conf" 2>>"$log"\n' "$LAB" "$s" "$LAB" "$s" "$LAB" >"$ROOT$LAB/bin/gpumemd-$s"
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
			FenceCgroupRoot = $(fence_cgroup_root)
			FenceState = $LAB/fence/state
			FenceFailures = $LAB/fence/failures.log
		CONF
	done
}
