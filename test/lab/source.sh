# The source-built labs' root (sourced by lab.sh): Slurm built from SchedMD's source of
# one release tag, once, into a Debian root cached like the chroot labs' (chroot.sh).
#
#   source_ensure ROOT TAG SOURCE SUITE
#
# ROOT is the cached root (for example /var/cache/gpumem-lab/slurm-25.11.7), TAG a
# SchedMD tag (slurm-25-11-7-1), SOURCE a git repository holding SchedMD's tags or an
# unpacked source tree of that very release (LAB_SLURM_SOURCE), SUITE the Debian suite
# whose gcc and libraries build it. The build happens in ROOT.tmp, renamed to ROOT at the
# end, so an interrupted one never looks finished; its log is ROOT.log. Nothing of
# Slurm's source or its build is ever written into this repository.
#
# What the lab relies on that Debian's packages would provide is made here too: the
# daemons in /usr/sbin, the plugins in Debian's folder (slurm-wlm, linked to Slurm's
# own), the headers in /usr/include/slurm for cgo/build.sh, a munge key, and the
# configured source tree in /usr/src/slurm (SLURM_SOURCE for cgo/build.sh, so that the
# plugins read job records at offsets measured from this very release).

# The build's Debian packages: the compiler, munge (auth/munge), libjwt (auth/slurm and
# cred/slurm are built only with it), json-c (serializer/json, for scontrol --json),
# MariaDB's client (accounting_storage/mysql, for slurmdbd), dbus and the kernel's BPF
# headers (cgroup/v2, the fence pass), lua (job_submit/lua), hwloc, yaml, readline.
SOURCE_PKGS=(gcc g++ make python3 pkg-config libc6-dev linux-libc-dev munge libmunge-dev libjwt-dev
	libjson-c-dev libmariadb-dev libdbus-1-dev liblua5.3-dev libhwloc-dev libyaml-dev libreadline-dev
	zlib1g-dev liblz4-dev perl ca-certificates)
SOURCE_CONFIGURE=(--prefix=/usr --sysconfdir=/etc/slurm --libdir=/usr/lib/x86_64-linux-gnu
	--localstatedir=/var --disable-debug --disable-static --enable-multiple-slurmd)

# source_missing says what to set when no source is given.
source_missing() {
	echo "no Slurm source for $1: clone https://github.com/SchedMD/slurm (or unpack its release tarball) and set LAB_SLURM_SOURCE to it"
}

# source_version TAG prints the release a SchedMD tag names (slurm-25-11-7-1: 25.11.7).
source_version() {
	local t=${1#slurm-}
	t=${t%-*}
	echo "${t//-/.}"
}

# source_export TAG SOURCE DEST unpacks the release's source into DEST: the tag of a git
# repository, or a copy of a tree that says it is that release (META).
source_export() {
	local tag=$1 src=$2 dest=$3 want have
	want=$(source_version "$tag")
	mkdir -p "$dest"
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$src" rev-parse -q --verify "refs/tags/$tag" >/dev/null ||
			die "$src has no tag $tag: fetch SchedMD's tags (git -C $src fetch --tags https://github.com/SchedMD/slurm)"
		git -C "$src" archive "$tag" | tar -x -C "$dest"
	else
		[ -f "$src/META" ] && [ -x "$src/configure" ] ||
			die "LAB_SLURM_SOURCE=$src is neither a git repository nor a Slurm source tree (no META and configure)"
		have=$(awk '$1=="Major:"{M=$2} $1=="Minor:"{m=$2} $1=="Micro:"{u=$2} END{print M"."m"."u}' "$src/META")
		[ "$have" = "$want" ] || die "LAB_SLURM_SOURCE=$src is Slurm $have, not $want ($tag)"
		cp -a "$src/." "$dest/"
	fi
}

# source_base SUITE CACHE prints the path of a minimal Debian SUITE with the build's
# packages, made once and shared by every release built on that suite: debootstrap
# (minbase), then apt inside it, whose resolver takes the alternatives in the packages'
# dependencies (libhwloc-dev's libltdl-dev wants automake | automaken) that debootstrap's
# --include does not.
source_base() {
	local suite=$1 cache=$2 base tmp log script m
	base=$cache/slurm-build-$suite
	[ -x "$base/usr/bin/gcc" ] && { echo "$base"; return 0; }
	command -v debootstrap >/dev/null || die "debootstrap is not installed: run test/lab/deps.sh"
	tmp=$base.tmp log=$base.log
	chroot_umount_at "$tmp"
	rm -rf "$tmp"
	mkdir -p "$cache"
	script=/usr/share/debootstrap/scripts/$suite
	[ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
	say "creating the $suite build root in $base (debootstrap and apt, a few minutes, once)" >&2
	debootstrap --variant=minbase "$suite" "$tmp" http://deb.debian.org/debian "$script" \
		>"$log" 2>&1 || { tail -20 "$log" >&2; die "debootstrap failed; see $log"; }
	for m in proc sys dev; do mount --bind "/$m" "$tmp/$m"; done
	if ! chroot "$tmp" env DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends \
		"${SOURCE_PKGS[@]}" >>"$log" 2>&1; then
		chroot_umount_at "$tmp"
		tail -20 "$log" >&2
		die "installing the build's packages in $tmp failed; see $log"
	fi
	chroot_umount_at "$tmp"
	chroot "$tmp" apt-get clean
	mv "$tmp" "$base"
	echo "$base"
}

# source_ensure ROOT TAG SOURCE SUITE builds Slurm TAG into ROOT unless it is there.
source_ensure() {
	local root=$1 tag=$2 src=$3 suite=$4 tmp log base t0
	[ -x "$root/usr/sbin/slurmctld" ] && return 0
	[ -n "$src" ] || die "$(source_missing "$tag")"
	[ -e "$src" ] || die "LAB_SLURM_SOURCE=$src does not exist; $(source_missing "$tag")"
	tmp=$root.tmp log=$root.log
	t0=$(date +%s)
	base=$(source_base "$suite" "$(dirname "$root")")
	chroot_umount_at "$tmp"
	rm -rf "$tmp"
	say "building Slurm $(source_version "$tag") ($tag) from $src into $root (once, tens of minutes; log $log)"
	cp -a "$base" "$tmp"
	source_export "$tag" "$src" "$tmp/usr/src/slurm"
	local m
	for m in proc sys dev; do mount --bind "/$m" "$tmp/$m"; done
	if ! chroot "$tmp" sh -ec "cd /usr/src/slurm
		./configure ${SOURCE_CONFIGURE[*]}
		make -j$(nproc)
		make install
		ldconfig" >"$log" 2>&1; then
		chroot_umount_at "$tmp"
		tail -30 "$log" >&2
		die "building Slurm $tag failed; see $log (the half-built root is $tmp)"
	fi
	chroot_umount_at "$tmp"
	source_check "$tmp" "$log"
	source_debianize "$tmp"
	mv "$tmp" "$root"
	say "built Slurm $tag in $(($(date +%s) - t0)) s"
}

# The plugins the lab needs of a build: configure leaves out, without a word beyond its
# log, any whose library it did not find.
SOURCE_PLUGINS=(auth_slurm cred_munge auth_munge serializer_json accounting_storage_slurmdbd
	accounting_storage_mysql cgroup_v2 proctrack_cgroup task_cgroup job_submit_lua select_cons_tres gres_gpu gres_shard)

# source_check ROOT LOG fails when the build in ROOT lacks a plugin the lab needs.
source_check() {
	local p missing=()
	for p in "${SOURCE_PLUGINS[@]}"; do
		[ -e "$1/usr/lib/x86_64-linux-gnu/slurm/$p.so" ] || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] ||
		die "the build in $1 has no ${missing[*]}: see configure's lines in $2 for the library it did not find"
}

# source_debianize ROOT gives a source-built root what the lab expects of Debian's
# packages: the plugins where Debian keeps them, the slurm user and /etc/slurm.
source_debianize() {
	local root=$1 lib=$1/usr/lib/x86_64-linux-gnu
	[ -d "$lib/slurm" ] || die "no plugins in $lib/slurm after make install"
	[ -e "$lib/slurm-wlm" ] || ln -s slurm "$lib/slurm-wlm"
	chroot "$root" sh -c 'getent group slurm >/dev/null || groupadd -r -g 64030 slurm
		getent passwd slurm >/dev/null || useradd -r -u 64030 -g slurm -d /nonexistent -s /usr/sbin/nologin slurm' ||
		die "cannot create the slurm user in $root"
	install -d "$root/etc/slurm" "$root/var/log/slurm" "$root/run/slurm"
	# Debian's man pages are gzipped, which the e2e matrix reads (test/e2e/matrix_test.go).
	find "$root/usr/share/man" -name '*.[1-8]' -type f -exec gzip -9nf {} +
	# munge's package makes its key at installation; make one where it did not.
	if [ ! -s "$root/etc/munge/munge.key" ]; then
		chroot "$root" sh -c 'mungekey -c 2>/dev/null || create-munge-key -f' >/dev/null 2>&1 || true
	fi
}
