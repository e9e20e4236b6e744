# The lab's guard against Slurm daemons it did not start, and its restart of a slurmd
# that never registers (sourced by lab.sh; its test, daemons_test.go, sources it alone).
#
# A daemon is found by /proc/PID/comm, the name the kernel keeps for it: the basename it
# was started as, so Debian's daemons show as slurmctld (the alternatives link in
# /usr/sbin) or slurmctld-wlm (the binary it names, and what 23.11's reconfigure execs).
# Not pgrep -x: it warns that a pattern longer than 15 characters, as
# "slurmctld(-wlm)?" is, matches nothing whenever nothing matches, which reads as if the
# guard could never fire.
SLURM_DAEMON_NAMES=" slurmctld slurmctld-wlm slurmd slurmd-wlm "

# slurm_daemon_pids prints the pids of the processes named as Slurm's daemons whose root
# is / (not a chroot's, such as the 24.11 lab's), one a line. LAB_PROC stands for /proc
# in the test.
slurm_daemon_pids() {
	local proc=${LAB_PROC:-/proc} d name
	for d in "$proc"/[0-9]*; do
		{ read -r name <"$d/comm"; } 2>/dev/null || continue # gone since the glob
		case "$SLURM_DAEMON_NAMES" in *" $name "*) ;; *) continue ;; esac
		[ "$(readlink "$d/root")" = / ] || continue
		echo "${d##*/}"
	done
	return 0
}

# foreign_daemons fails when Slurm daemons the lab did not start run on this release's
# ports (the host's 22.05 only: 24.11's chroot and ports are the lab's own).
foreign_daemons() {
	[ -n "$ROOT" ] && return 0
	local mine pid
	mine=" $(daemon_pids | tr '\n' ' ') "
	for pid in $(slurm_daemon_pids); do
		case "$mine" in *" $pid "*) ;; *) die "a Slurm daemon the lab did not start runs here (pid $pid, $(tr '\0' ' ' <"${LAB_PROC:-/proc}/$pid/cmdline")): stop it first; the lab would take its ports and configuration" ;; esac
	done
}

# restart_unregistered restarts, once and out loud, the slurmd of each node that is not
# idle $1 seconds after it started, as a node's systemd would restart a slurmd that hangs:
# 24.11's slurmd has hung with every thread waiting in its connection manager (seen at
# its shutdown; test/lab/mig-reload.sh). Nothing of gpumem's runs in slurmd before it
# registers but gres.conf, which a restart does not change: a bad one fails again.
# From lab.sh: ROOT, LAB, say, lab_in, poll, pid_alive, pidfile_pid and start_slurmd.
restart_unregistered() {
	local secs=$1 n state pid f
	while read -r n state; do
		[ "$state" = idle ] && continue
		f=$ROOT$LAB/run/slurmd-$n.pid
		pid=$(pidfile_pid "$f")
		if [ -n "$pid" ] && pid_alive "$pid"; then
			say "node $n is $state ${secs}s after its slurmd (pid $pid) started: restarting it; its log ends:"
			kill -9 "$pid" 2>/dev/null || true
			poll 5 eval "! pid_alive $pid" || true
		else
			say "node $n is $state and its slurmd is not running: starting it again; its log ends:"
		fi
		f=$ROOT$LAB/log/slurmd-$n.log
		if [ -s "$f" ]; then tail -5 "$f" | sed 's/^/    /'; else echo "    (no log)"; fi
		start_slurmd "$n"
	done < <(lab_in sinfo -h -N -o '%N %T' 2>/dev/null | sort -u)
}
