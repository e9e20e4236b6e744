#!/bin/sh
# Build the .deb from bin/ (make build first) and check what an admin installs: the
# binaries and plugins, gpumem's license, the third-party notices and the Debian
# copyright file under /usr/share/doc/gpumem/, and a package version that is the one
# git gives and the one the binaries report.
#
#   test/package-test.sh [BINDIR]     (make package-test builds first)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$top/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "package-test: FAIL: $*" >&2; fail=1; }

"$top/packaging/build.sh" "$bin" "$work/dist" >/dev/null
deb=$(ls "$work"/dist/gpumem_*.deb)
want=$("$top/packaging/version.sh" --deb)
got=$(dpkg-deb -f "$deb" Version)
[ "$got" = "$want" ] || bad "dpkg-deb -f Version is $got, packaging/version.sh --deb says $want"
[ "$(dpkg-deb -f "$deb" Package)" = gpumem ] || bad "package name is not gpumem"

dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$work/list"
doc=/usr/share/doc/gpumem
for f in /usr/sbin/gpumemd /usr/bin/gpumemctl $doc/LICENSE $doc/NOTICE $doc/THIRD_PARTY_NOTICES.md \
	$doc/copyright $doc/CHANGELOG.md $doc/SECURITY.md; do
	grep -qx "$f" "$work/list" || bad "$f is not in the package"
done
for so in job_submit_gpumem.so cli_filter_gpumem.so; do
	if [ -f "$bin/$so" ]; then
		grep -q "/slurm-wlm/$so\$" "$work/list" || bad "$so was built but is not in the package"
	fi
done

# What is installed is what the repository holds, and the binaries say the package's
# version (the semantic form of it).
mkdir "$work/root"
dpkg-deb -x "$deb" "$work/root"
for f in LICENSE NOTICE THIRD_PARTY_NOTICES.md; do
	cmp -s "$top/$f" "$work/root$doc/$f" || bad "$doc/$f differs from $f"
done
cmp -s "$top/packaging/copyright" "$work/root$doc/copyright" || bad "$doc/copyright differs from packaging/copyright"
head -1 "$work/root$doc/copyright" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/$' ||
	bad "$doc/copyright is not in the machine-readable format"
semver=$("$top/packaging/version.sh")
for b in /usr/sbin/gpumemd /usr/bin/gpumemctl; do
	v=$("$work/root$b" --version)
	case $v in *" $semver (revision "*) ;; *) bad "$b --version says '$v', want $semver" ;; esac
done

[ $fail = 0 ] || exit 1
echo "package-test: ok: $(basename "$deb") carries the license, NOTICE, third-party notices and copyright; version $got"
