# The chroot labs' Debian root (sourced by lab.sh): trixie for Slurm 24.11, forky for
# 26.05, bookworm for 22.05 with LAB_CHROOT=1 ($SUITE), made once by debootstrap and
# cached, mounted while the lab is up.
CHROOT_PKGS=slurmctld,slurmd,slurm-client,munge,libslurm-dev,slurm-wlm-basic-plugins,slurmdbd,gcc,libc6-dev

chroot_ensure() {
	[ -x "$ROOT/usr/sbin/slurmctld" ] && return 0
	if [ -n "${SRC_TAG:-}" ]; then
		source_ensure "$ROOT" "$SRC_TAG" "${LAB_SLURM_SOURCE:-}" "$SUITE"
		return
	fi
	command -v debootstrap >/dev/null || die "debootstrap is not installed: run test/lab/deps.sh"
	local tmp=$ROOT.tmp
	say "creating the $SUITE chroot in $ROOT (debootstrap, a few minutes, once)"
	# A half-made tree from an interrupted run may still have mounts: never rm through them.
	chroot_umount_at "$tmp"
	rm -rf "$tmp"
	mkdir -p "$(dirname "$ROOT")"
	# An older debootstrap (bookworm's) has no script for a newer suite: sid's fits every
	# suite after it.
	local script=/usr/share/debootstrap/scripts/$SUITE
	[ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
	local log
	log=$(dirname "$ROOT")/debootstrap-$SUITE.log
	debootstrap --variant=minbase --include="$CHROOT_PKGS" "$SUITE" "$tmp" http://deb.debian.org/debian "$script" \
		>"$log" 2>&1 || die "debootstrap failed; see $log"
	mv "$tmp" "$ROOT"
}

chroot_mount() {
	local m
	for m in proc sys dev; do
		mountpoint -q "$ROOT/$m" || mount --bind "/$m" "$ROOT/$m" ||
			die "cannot bind-mount /$m into $ROOT (the $REL lab needs mount privileges)"
	done
	# Before the cgroup-disabled gate (24.05) slurmd loads a cgroup plugin whatever the
	# task and proctrack plugins: it needs the host's cgroup filesystems (v1: one mount
	# per controller), which a bind mount of /sys leaves out.
	if ! has_gate cgroup-disabled && mountpoint -q /sys/fs/cgroup && ! mountpoint -q "$ROOT/sys/fs/cgroup"; then
		mount --rbind /sys/fs/cgroup "$ROOT/sys/fs/cgroup" ||
			die "cannot bind-mount /sys/fs/cgroup into $ROOT (the $REL lab needs mount privileges)"
	fi
	cp /etc/hosts "$ROOT/etc/hosts"
}

chroot_umount_at() {
	local m
	for m in sys/fs/cgroup dev sys proc; do
		if mountpoint -q "$1/$m" 2>/dev/null; then
			umount -R "$1/$m" 2>/dev/null || umount -R -l "$1/$m"
		fi
	done
}

chroot_umount() { chroot_umount_at "$ROOT"; }
