# A backup slurmctld (sourced by lab.sh; LAB_BACKUP_CTLD=1, opt-in): slurm.conf gets a
# second SlurmctldHost line and a short SlurmctldTimeout, and a second slurmctld runs
# on this host on the same StateSaveLocation, as a backup controller on shared storage
# does. Without the opt-in nothing here changes the lab.
#
# slurmctld takes its place in the SlurmctldHost list from its host name, listens on
# that line's address only with NoCtldInAddrAny (then resolving its host name), and
# kills whatever process holds its pid file at start. So the backup runs in namespaces
# of its own: a host name (BC_HOST) on its own loopback address (BC_ADDR), an /etc/hosts
# that knows that name, and its own run/ and log/ bind-mounted over the lab's, so that
# its pid file and log are not the primary's: they are $LAB/backup-ctld/{run,log} as
# the host sees them.
BACKUP_CTLD=${LAB_BACKUP_CTLD:-0}
BC_HOST=labctld2
BC_ADDR=127.0.0.2
BC_DIR=$LAB/backup-ctld

bc_on() { [ "$BACKUP_CTLD" = 1 ]; }

# bc_conf adds the backup's lines to the slurm.conf text on stdin.
bc_conf() {
	if ! bc_on; then
		cat
		return 0
	fi
	# Failover after 10 s without the primary, not Slurm's default 120 s. NoCtldInAddrAny:
	# each slurmctld listens on its own line's address only; 26.05's primary otherwise
	# takes the port on every address, 127.0.0.2 too, answers the REQUEST_CONTROL it
	# sends the backup at start itself, and shuts down.
	sed -e "/^SlurmctldHost=/a SlurmctldHost=$BC_HOST($BC_ADDR)\\
SlurmctldTimeout=10\\
CommunicationParameters=NoCtldInAddrAny"
}

bc_up() {
	bc_on || return 0
	cl_on && die "LAB_BACKUP_CTLD=1 with LAB_CONFIGLESS=1: the lab has no configless backup controller"
	rm -rf "$ROOT$BC_DIR"
	install -d "$ROOT$BC_DIR/run" "$ROOT$BC_DIR/log"
	# With NoCtldInAddrAny slurmctld resolves its own host name: only the backup sees it.
	{
		cat "$ROOT/etc/hosts"
		echo "$BC_ADDR $BC_HOST"
	} >"$ROOT$BC_DIR/hosts"
	# unshare's mount namespace is private: the bind mounts are the backup's alone.
	unshare --uts --mount sh -c '
		hostname "$1" &&
		mount --bind "$2$3/run" "$2$4/run" &&
		mount --bind "$2$3/log" "$2$4/log" &&
		mount --bind "$2$3/hosts" "$2/etc/hosts" &&
		if [ -n "$2" ]; then exec chroot "$2" env GPUMEM_CONF="$5" slurmctld -i; else exec env GPUMEM_CONF="$5" slurmctld -i; fi
	' sh "$BC_HOST" "$ROOT" "$BC_DIR" "$LAB" "$CONF/gpumem.conf" ||
		die "the backup slurmctld did not start; see $ROOT$BC_DIR/log/"
	wait_for 30 "the backup slurmctld" bc_standby
}

# bc_primary_up: scontrol ping has the primary up (its exit code counts the backup too).
bc_primary_up() { lab_in scontrol ping | grep -q "(primary) at .* is UP"; }

# bc_standby: scontrol ping has the backup up.
bc_standby() { lab_in scontrol ping | grep -q "at $BC_HOST is UP"; }

# bc_pids: the backup's pid, which no pid file under $LAB/run names.
bc_pids() {
	local pid
	pid=$(pidfile_pid "$ROOT$BC_DIR/run/slurmctld.pid")
	pid_alive "$pid" && echo "$pid"
	return 0
}
