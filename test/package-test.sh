#!/bin/bash
# Builds every package (packaging/build.sh: deb and rpm, gpumem-plugins-REL per Slurm
# release, gpumemd, gpumemctl) and checks what an admin gets:
#   - each deb's and rpm's name, version (the one git gives, the one the binaries say),
#     dependencies (the plugins on exactly their Slurm release), files, conffiles and
#     maintainer scripts (dpkg-deb; rpm -qp);
#   - the license, NOTICE, third-party notices and copyright in every package;
#   - every binary and plugin in every deb and rpm importing no glibc symbol newer than
#     2.28 (objdump -T), so the same packages start on RHEL/Rocky 8 as on Debian 12;
#   - with --install (make test; root): the debs installed with dpkg into the lab's
#     Debian root of their release (the bookworm, trixie and forky chroots: make
#     chroots), never enabling a service, gpumemd's and gpumemctl's man pages and
#     gpumemctl's completions in place, a plugin package refused on another release's
#     Slurm, and purge leaving nothing behind; this machine's own Slurm is never touched;
#   - with --lab (as well; under the lab lock): each chroot lab (22.05's with
#     LAB_CHROOT=1) started with the installed plugins, slurmctld loading them from
#     Debian's plugin folder and rewriting a gpu:mem job, and its srun loading cli_filter.
# A release built from source (25.11, say) is tested the same way, its plugins built from
# its lab root's headers and tree and installed there with --force-depends (that root has
# Slurm from make install, no slurm-client package):
#   R=$(LAB_SLURM=25.11 test/lab/lab.sh where | sed -n 's/^root=//p')
#   PLUGIN_RELEASES="25.11=$R/usr/include" PLUGIN_SOURCES="25.11=$R/usr/src/slurm" \
#       LAB_SLURM_SOURCE=~/slurm test/package-test.sh --lab
#
#   test/package-test.sh [--install] [--lab]
set -uo pipefail

install=0 lab=0
while [ $# -gt 0 ]; do
	case $1 in
	--install) install=1 ;;
	--lab) install=1 lab=1 ;;
	*) break ;;
	esac
	shift
done
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "package-test: FAIL: $*" >&2; fail=1; }

"$top/packaging/build.sh" "$work/bin" "$work/dist" >"$work/build.log" 2>&1 || {
	cat "$work/build.log" >&2
	bad "packaging/build.sh failed"
	exit 1
}
grep -v '^built ' "$work/build.log" >&2
want=$("$top/packaging/version.sh" --deb)
semver=$("$top/packaging/version.sh")
releases=$(sed -n 's|^built .*/gpumem-plugins-\([0-9.]*\)_.*\.deb$|\1|p' "$work/build.log")
[ -n "$releases" ] || bad "no gpumem-plugins package was built"
deb() { ls "$work"/dist/"$1"_*.deb 2>/dev/null; }
# exact_of REL: the Slurm release (24.11.5) REL's plugins were built for, as the build
# said: slurmctld loads a job_submit or cli_filter plugin of exactly its own release.
exact_of() {
	sed -n "s/^job records for scontrol update on Slurm \($1\.[0-9]*\):.*/\1/p" "$work/build.log" | head -1
}
rpmf() { ls "$work"/dist/"$1"-[0-9]*.rpm 2>/dev/null; }
# release_from REL: where the lab's Slurm of REL comes from (debian or source: the release table).
release_from() { (cd "$top" && CGO_ENABLED=0 go run ./cmd/slurm-release shell "$1") | sed -n "s/^SLURM_FROM='\(.*\)'\$/\1/p"; }

# glibc_of ELF...: the newest GLIBC_ symbol version the files import (objdump -T), which
# their package must declare: on an older libc they do not start.
glibc_of() {
	objdump -T "$@" | grep -o '(GLIBC_[0-9.]*)' | tr -d '()' | sed 's/^GLIBC_//' | sort -Vu | tail -1
}

# The oldest glibc the packages are for: RHEL/Rocky 8's (docs/install.md lists the
# distributions). packaging/zig-cc links against it.
glibc_max=2.28
elves=0

# check_glibc PACKAGE ROOT: every ELF file under the package's extracted ROOT imports
# glibc symbols of glibc_max or older only; each newer one is named, with its file.
check_glibc() {
	local f n=0 newer
	while IFS= read -r f; do
		[ "$(od -An -c -N4 "$f" | tr -d ' ')" = '177ELF' ] || continue
		n=$((n + 1))
		newer=$(objdump -T "$f" | awk -v max="$glibc_max" '
			match($0, /GLIBC_[0-9][0-9.]*/) {
				v = substr($0, RSTART + 6, RLENGTH - 6)
				split(v, a, "."); split(max, m, ".")
				if (a[1] + 0 > m[1] + 0 || (a[1] + 0 == m[1] + 0 && a[2] + 0 > m[2] + 0)) print $NF "@GLIBC_" v
			}' | sort -u | paste -sd ' ' -)
		[ -z "$newer" ] || bad "$1: ${f#"$2"} needs glibc newer than $glibc_max: $newer"
	done < <(find "$2" -type f)
	[ $n -gt 0 ] || bad "$1: no binary or plugin found to check against glibc $glibc_max"
	elves=$((elves + n))
}

# has LIST PATH...: each PATH is in the file list LIST.
has() {
	local list=$1 f
	shift
	for f in "$@"; do grep -qx "$f" "$list" || bad "$f is not in $(basename "$list" .list)"; done
}

check_docs() { # package, extracted root
	local d=/usr/share/doc/$1 f
	for f in LICENSE NOTICE THIRD_PARTY_NOTICES.md; do
		cmp -s "$top/$f" "$2$d/$f" || bad "$1: $d/$f differs from $f"
	done
	cmp -s "$top/packaging/copyright" "$2$d/copyright" || bad "$1: $d/copyright differs from packaging/copyright"
	head -1 "$2$d/copyright" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/$' ||
		bad "$1: $d/copyright is not in the machine-readable format"
}

# --- debs
pkgs="gpumemd gpumemctl"
for rel in $releases; do pkgs="$pkgs gpumem-plugins-$rel"; done
for p in $pkgs; do
	f=$(deb "$p") || { bad "no $p deb"; continue; }
	[ "$(dpkg-deb -f "$f" Package)" = "$p" ] || bad "$f: Package is not $p"
	[ "$(dpkg-deb -f "$f" Version)" = "$want" ] || bad "$p: Version $(dpkg-deb -f "$f" Version), packaging/version.sh --deb says $want"
	dpkg-deb -c "$f" | awk '{print $NF}' | sed 's|^\./|/|; s|/$||' >"$work/$p.deb.list"
	mkdir -p "$work/x/$p"
	dpkg-deb -x "$f" "$work/x/$p"
	dpkg-deb -e "$f" "$work/x/$p.control"
	check_docs "$p" "$work/x/$p"
	check_glibc "$p deb" "$work/x/$p"
done
for rel in $releases; do
	p=gpumem-plugins-$rel
	exact=$(exact_of "$rel")
	next=$(echo "$exact" | awk -F. '{printf "%s.%s.%d", $1, $2, $3 + 1}')
	libc=$(glibc_of "$work/x/$p"/usr/lib/x86_64-linux-gnu/slurm-wlm/*.so)
	[ "$(dpkg-deb -f "$(deb "$p")" Depends)" = "slurm-client (>= $exact~), slurm-client (<< $next~), libc6 (>= $libc)" ] ||
		bad "$p: Depends is '$(dpkg-deb -f "$(deb "$p")" Depends)', want exactly Slurm $exact's slurm-client (the release its plugins were built for: slurmctld loads no other) and libc6 (>= $libc)"
	has "$work/$p.deb.list" /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_gpumem.so /usr/lib/x86_64-linux-gnu/slurm-wlm/cli_filter_gpumem.so \
		/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_gpumem.so
done
has "$work/gpumemd.deb.list" /usr/sbin/gpumemd /usr/sbin/gpumemd-task-prolog /usr/sbin/gpumemd-prolog /usr/sbin/gpumemd-epilog /lib/systemd/system/gpumemd.service \
	/etc/default/gpumemd /var/lib/gpumem /usr/share/doc/gpumemd/examples/gpumem.conf \
	/usr/share/man/man8/gpumemd.8.gz /usr/share/man/man8/gpumemd-task-prolog.8.gz
has "$work/gpumemctl.deb.list" /usr/bin/gpumemctl /lib/systemd/system/gpumemctl-steer.service /etc/default/gpumemctl-steer \
	/lib/systemd/system/gpumemctl-pull.service /etc/default/gpumemctl-pull \
	/lib/systemd/system/gpumemctl-exporter.service /etc/default/gpumemctl-exporter /usr/share/doc/gpumemctl/monitoring.md \
	/usr/share/man/man1/gpumemctl.1.gz /usr/share/man/man1/gpumemctl-gres-diff.1.gz \
	/usr/share/bash-completion/completions/gpumemctl /usr/share/zsh/vendor-completions/_gpumemctl \
	/usr/share/fish/vendor_completions.d/gpumemctl.fish /usr/share/gpumem/monitoring/gpumem-rules.yml \
	/usr/share/gpumem/monitoring/gpumem-rules.sh /usr/share/gpumem/monitoring/gpumem-dashboard.json
for b in /usr/sbin/gpumemd:gpumemd /usr/bin/gpumemctl:gpumemctl; do
	libc=$(glibc_of "$work/x/${b#*:}${b%%:*}")
	dpkg-deb -f "$(deb "${b#*:}")" Depends | grep -qF "libc6 (>= $libc)" ||
		bad "${b#*:}: Depends '$(dpkg-deb -f "$(deb "${b#*:}")" Depends)' lacks libc6 (>= $libc), which its binary needs"
done
grep -qx /etc/default/gpumemd "$work/x/gpumemd.control/conffiles" || bad "gpumemd: /etc/default/gpumemd is not a conffile"
for s in postinst prerm postrm; do
	[ -x "$work/x/gpumemd.control/$s" ] || bad "gpumemd: no $s maintainer script"
done
# Installing never enables or starts a service: only the admin does.
if cat "$work"/x/*.control/postinst | grep -v '^\s*#' | grep -Eq 'systemctl (enable|start|restart)|deb-systemd-helper enable'; then
	bad "a postinst enables or starts a service"
fi
grep -q 'rm -rf /var/lib/gpumem' "$work/x/gpumemd.control/postrm" || bad "gpumemd: purge does not remove /var/lib/gpumem"
for b in /usr/sbin/gpumemd:gpumemd /usr/bin/gpumemctl:gpumemctl; do
	v=$("$work/x/${b#*:}${b%%:*}" --version)
	case $v in *" $semver (revision "*) ;; *) bad "${b%%:*} --version says '$v', want $semver" ;; esac
done
# The man pages are the binaries' own help: flags and exit status.
zcat "$work/x/gpumemd/usr/share/man/man8/gpumemd.8.gz" | grep -q 'fragmentation\\-sizes\|fragmentation-sizes' ||
	bad "gpumemd.8 does not list gpumemd's flags"
zcat "$work/x/gpumemd/usr/share/man/man8/gpumemd.8.gz" | grep -q 'Exit status' || bad "gpumemd.8 says nothing of the exit status"
zcat "$work/x/gpumemctl/usr/share/man/man1/gpumemctl-gres-diff.1.gz" | grep -q 'Exit status' ||
	bad "gpumemctl-gres-diff.1 says nothing of the exit status"

# --- rpms
if command -v rpm >/dev/null; then
	for p in $pkgs; do
		f=$(rpmf "$p") || { bad "no $p rpm"; continue; }
		got=$(rpm -qp --qf '%{NAME} %{VERSION} %{LICENSE}' "$f" 2>/dev/null)
		[ "$got" = "$p $want Apache-2.0" ] || bad "$f: rpm says '$got', want '$p $want Apache-2.0'"
		rpm -qpl "$f" 2>/dev/null >"$work/$p.rpm.list"
		mkdir -p "$work/r/$p"
		# The payload's names are absolute (/usr/sbin/gpumemd): unpacked under the
		# folder, never over this machine's own files. rpm2cpio's exit status is not
		# asked: rpm 4.18's is 1 whenever the stream's length differs from the rpm's
		# ARCHIVESIZE, which nFPM gives without the archive's padding; cpio fails on a
		# short or empty stream.
		if (cd "$work/r/$p" && { rpm2cpio "$f" || :; } | cpio -idm --quiet --no-absolute-filenames 2>/dev/null); then
			check_glibc "$p rpm" "$work/r/$p"
		else
			bad "$p rpm: its files could not be unpacked (rpm2cpio | cpio; test/lab/deps.sh installs cpio)"
		fi
	done
	for rel in $releases; do
		p=gpumem-plugins-$rel
		exact=$(exact_of "$rel")
		next=$(echo "$exact" | awk -F. '{printf "%s.%s.%d", $1, $2, $3 + 1}')
		deps=$(rpm -qpR "$(rpmf "$p")" 2>/dev/null | grep '^slurm' | sort | tr '\n' ',')
		[ "$deps" = "slurm < $next,slurm >= $exact," ] || bad "$p rpm: requires '$deps', want slurm >= $exact and < $next"
		libc=$(glibc_of "$work/x/$p"/usr/lib/x86_64-linux-gnu/slurm-wlm/*.so)
		rpm -qpR "$(rpmf "$p")" 2>/dev/null | grep -qx "glibc >= $libc" || bad "$p rpm: does not require glibc >= $libc, which its plugins need"
		has "$work/$p.rpm.list" /usr/lib64/slurm/job_submit_gpumem.so /usr/lib64/slurm/cli_filter_gpumem.so /usr/lib64/slurm/spank_gpumem.so
	done
	for b in /usr/sbin/gpumemd:gpumemd /usr/bin/gpumemctl:gpumemctl; do
		libc=$(glibc_of "$work/x/${b#*:}${b%%:*}")
		rpm -qpR "$(rpmf "${b#*:}")" 2>/dev/null | grep -qx "glibc >= $libc" || bad "${b#*:} rpm: does not require glibc >= $libc, which its binary needs"
	done
	has "$work/gpumemd.rpm.list" /usr/sbin/gpumemd /usr/lib/systemd/system/gpumemd.service /etc/sysconfig/gpumemd /var/lib/gpumem \
		/usr/share/man/man8/gpumemd.8.gz
	has "$work/gpumemctl.rpm.list" /usr/bin/gpumemctl /usr/lib/systemd/system/gpumemctl-steer.service \
		/usr/lib/systemd/system/gpumemctl-pull.service /etc/sysconfig/gpumemctl-pull \
		/usr/lib/systemd/system/gpumemctl-exporter.service /etc/sysconfig/gpumemctl-exporter \
		/usr/share/man/man1/gpumemctl.1.gz /usr/share/zsh/site-functions/_gpumemctl
	rpm -qpc "$(rpmf gpumemd)" 2>/dev/null | grep -qx /etc/sysconfig/gpumemd || bad "gpumemd rpm: /etc/sysconfig/gpumemd is not %config"
	s=$(rpm -qp --scripts "$(rpmf gpumemd)" 2>/dev/null)
	for k in 'postinstall scriptlet' 'preuninstall scriptlet' 'postuninstall scriptlet'; do
		echo "$s" | grep -q "^$k" || bad "gpumemd rpm has no $k"
	done
	echo "$s" | grep -v '^\s*#' | grep -Eq 'systemctl (enable|start|restart)' && bad "gpumemd rpm's scriptlets enable or start gpumemd"
else
	bad "rpm is not installed (apt-get install rpm, or test/lab/deps.sh): the rpms are unchecked"
fi

# --- installs
# chroot_install REL ROOT: the release's debs into its Debian root, checked, purged.
chroot_install() {
	local rel=$1 root=$2 other p d t0=$SECONDS
	d=$root/tmp/gpumem-package-test
	rm -rf "$d" && mkdir -p "$d"
	cp "$(deb "gpumem-plugins-$rel")" "$(deb gpumemd)" "$(deb gpumemctl)" "$d/"
	# A release built from source (test/lab/source.sh) has Slurm from make install and no
	# slurm-client package: dpkg installs the plugins over that one dependency, and any
	# other it finds unmet still fails. Its plugin folder slurm-wlm is a link to Slurm's
	# own, which purging the plugins removes (dpkg owns it as their empty folder): put back.
	local force="" plugdir=/usr/lib/x86_64-linux-gnu/slurm-wlm link=""
	if [ "$(release_from "$rel")" = source ]; then
		force=--force-depends
		link=$(readlink "$root$plugdir") || link=""
	fi
	# The glob is the chroot's, so a shell inside it expands it.
	if ! chroot "$root" sh -c "dpkg -i $force /tmp/gpumem-package-test/*.deb" >"$work/install-$rel.log" 2>&1; then
		bad "dpkg -i in the $rel root failed: $(tail -5 "$work/install-$rel.log")"
		chroot "$root" dpkg --purge "gpumem-plugins-$rel" gpumemd gpumemctl >>"$work/install-$rel.log" 2>&1
		[ -z "$link" ] || [ -e "$root$plugdir" ] || ln -s "$link" "$root$plugdir"
		return
	fi
	if [ -n "$force" ] && grep ' depends on ' "$work/install-$rel.log" | grep -v " depends on slurm-client " >&2; then
		bad "$rel: dpkg -i $force found dependencies unmet other than slurm-client (above)"
	fi
	for p in /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_gpumem.so /usr/sbin/gpumemd /usr/bin/gpumemctl \
		/usr/share/man/man1/gpumemctl.1.gz /usr/share/man/man8/gpumemd.8.gz /var/lib/gpumem /etc/default/gpumemd; do
		[ -e "$root$p" ] || bad "$rel: $p is not there after dpkg -i"
	done
	chroot "$root" gpumemctl --version | grep -q " $semver " || bad "$rel: the installed gpumemctl --version is not $semver"
	ls "$root"/etc/systemd/system/*.wants/gpumem* >/dev/null 2>&1 && bad "$rel: installing enabled a gpumem service"
	for other in $releases; do
		[ "$other" = "$rel" ] && continue
		cp "$(deb "gpumem-plugins-$other")" "$d/"
		chroot "$root" dpkg --dry-run -i "/tmp/gpumem-package-test/$(basename "$(deb "gpumem-plugins-$other")")" >/dev/null 2>&1 &&
			bad "gpumem-plugins-$other would install on Slurm $rel"
	done
	[ "$lab" = 1 ] && lab_check "$rel"
	chroot "$root" dpkg --purge "gpumem-plugins-$rel" gpumemd gpumemctl >>"$work/install-$rel.log" 2>&1 ||
		bad "$rel: dpkg --purge failed"
	[ -z "$link" ] || [ -e "$root$plugdir" ] || ln -s "$link" "$root$plugdir"
	for p in /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_gpumem.so /usr/sbin/gpumemd /var/lib/gpumem \
		/etc/default/gpumemd /etc/default/gpumemctl-steer /etc/default/gpumemctl-pull /etc/default/gpumemctl-exporter /usr/share/doc/gpumemd; do
		[ -e "$root$p" ] && bad "$rel: $p is left after dpkg --purge"
	done
	rm -rf "$d"
	echo "package-test: $rel: installed in $root, checked$([ "$lab" = 1 ] && echo ", its lab started"), purged in $((SECONDS - t0))s"
}

# in_root NAME: the processes named NAME running in the chroot $root.
in_root() {
	local p
	for p in $(pgrep -x "$1"); do [ "$(readlink "/proc/$p/root")" = "$root" ] && echo "$p"; done
}

# lab_check REL: the lab of REL started with the installed plugins, in its chroot (22.05's
# too, so the machine's own Slurm is left alone).
lab_check() {
	local rel=$1 lab=$top/test/lab/lab.sh pid out dir cf p
	# What the plugins need of the lab: slurmctld, the nodes and a job; no accounting.
	export LAB_CHROOT=1 LAB_ACCOUNTING=0
	if ! LAB_SLURM=$rel "$lab" up >"$work/lab-$rel.log" 2>&1; then
		bad "$rel: the lab did not start with the installed plugins: $(tail -3 "$work/lab-$rel.log")"
	else
		pid=$(in_root slurmctld | head -1)
		# maps names files as this shell sees them: under the chroot's folder, with links
		# resolved (a source-built root's slurm-wlm is a link to slurm).
		dir=$(cd "$root/usr/lib/x86_64-linux-gnu/slurm-wlm" && pwd -P)
		grep -q " $dir/job_submit_gpumem.so\$" "/proc/$pid/maps" 2>/dev/null ||
			bad "$rel: slurmctld did not load the installed job_submit_gpumem.so"
		# The clients load cli_filter: an srun of the lab's, seen while its job runs.
		LAB_SLURM=$rel "$lab" run srun -N1 --gres=gpu:mem:10g -t 1 sleep 3 >/dev/null 2>&1 &
		cf=0
		for _ in $(seq 100); do
			for p in $(in_root srun); do grep -q " $dir/cli_filter_gpumem.so\$" "/proc/$p/maps" 2>/dev/null && cf=1; done
			[ $cf = 1 ] && break
			sleep 0.1
		done
		wait $!
		[ $cf = 1 ] || bad "$rel: srun did not load the installed cli_filter_gpumem.so"
		out=$(LAB_SLURM=$rel "$lab" run srun -N1 --gres=gpu:mem:10g -t 1 sh -c 'echo $SLURM_JOB_ID' 2>&1)
		id=$(echo "$out" | tail -1)
		LAB_SLURM=$rel "$lab" run scontrol show job "$id" 2>/dev/null | grep -q 'TresPerNode=gres[:/]shard:10' ||
			bad "$rel: a gpu:mem:10g job was not rewritten by the installed plugins: $out"
	fi
	LAB_SLURM=$rel "$lab" down >/dev/null 2>&1
}

if [ "$install" = 1 ]; then
	[ "$(id -u)" -eq 0 ] || bad "--install needs root (dpkg in the lab's chroots)"
	for rel in $releases; do
		# The lab's chroot of the release (the table's; the host's release in one too).
		if ! r=$(LAB_CHROOT=1 LAB_SLURM=$rel "$top/test/lab/lab.sh" where 2>&1); then
			bad "$rel: the lab has no root for Slurm $rel to install gpumem-plugins-$rel into: $r"
			continue
		fi
		r=$(echo "$r" | sed -n 's/^root=//p')
		if [ -x "$r/usr/sbin/slurmctld" ]; then
			chroot_install "$rel" "$r"
		else
			bad "$rel: no chroot at $r to install the packages into (make chroots)"
		fi
	done
fi

[ $fail = 0 ] || exit 1
n=$(ls "$work"/dist | wc -l)
echo "package-test: ok: $n packages, version $want; their $elves binaries and plugins need glibc $glibc_max at most:"
(cd "$work/dist" && du -h -- *) | sed 's/^/package-test:   /'
