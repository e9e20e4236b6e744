# The Slurm 24.11 lab's Debian trixie chroot (sourced by lab.sh): made once by
# debootstrap and cached, mounted while the lab is up.
CHROOT_PKGS=slurmctld,slurmd,slurm-client,munge,libslurm-dev,slurm-wlm-basic-plugins,slurmdbd,gcc,libc6-dev

chroot_ensure() {
	[ -x "$ROOT/usr/sbin/slurmctld" ] && return 0
	command -v debootstrap >/dev/null || die "debootstrap is not installed: run test/lab/deps.sh"
	local tmp=$ROOT.tmp
	say "creating the trixie chroot in $ROOT (debootstrap, a few minutes, once)"
	# A half-made tree from an interrupted run may still have mounts: never rm through them.
	chroot_umount_at "$tmp"
	rm -rf "$tmp"
	mkdir -p "$(dirname "$ROOT")"
	debootstrap --variant=minbase --include="$CHROOT_PKGS" trixie "$tmp" http://deb.debian.org/debian \
		>"$(dirname "$ROOT")/debootstrap.log" 2>&1 ||
		die "debootstrap failed; see $(dirname "$ROOT")/debootstrap.log"
	mv "$tmp" "$ROOT"
}

chroot_mount() {
	local m
	for m in proc sys dev; do
		mountpoint -q "$ROOT/$m" || mount --bind "/$m" "$ROOT/$m" ||
			die "cannot bind-mount /$m into $ROOT (the 24.11 lab needs mount privileges)"
	done
	cp /etc/hosts "$ROOT/etc/hosts"
}

chroot_umount_at() {
	local m
	for m in dev sys proc; do
		if mountpoint -q "$1/$m" 2>/dev/null; then
			umount "$1/$m" 2>/dev/null || umount -l "$1/$m"
		fi
	done
}

chroot_umount() { chroot_umount_at "$ROOT"; }
