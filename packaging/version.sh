#!/bin/sh
# gpumem's version, derived from git tags (vMAJOR.MINOR.PATCH), for every build:
#
#   packaging/version.sh              v0.1.0, v0.1.0-3-gabc1234 (3 commits after the tag),
#                                     v0.0.0-172-gabc1234 (no tag yet); -dirty with changes
#   packaging/version.sh --deb        0.1.0, 0.1.0+git3.gabc1234, 0.0.0+git172.gabc1234
#                                     (dpkg orders these as the commits are ordered)
#   packaging/version.sh --revision   the commit (12 hex digits)
#   packaging/version.sh --ldflags    -X flags that stamp both into internal/version
#
# VERSION in the environment (v0.1.0 or 0.1.0) overrides git, for a source tree without
# .git. The first tag to make is v0.1.0 (see CHANGELOG.md).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${VERSION:-}" ]; then
	v=v${VERSION#v}
elif git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	if ! v=$(git -C "$top" describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
		v=v0.0.0-$(git -C "$top" rev-list --count HEAD)-g$(git -C "$top" rev-parse --short=7 HEAD)
		git -C "$top" diff --quiet HEAD 2>/dev/null || v=$v-dirty
	fi
else
	v=v0.0.0-unknown
fi
rev=$(git -C "$top" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

case ${1:-} in
"") echo "$v" ;;
--revision) echo "$rev" ;;
--deb)
	# v1.2.3[-rc.1][-N-gSHA][-dirty] -> 1.2.3[~rc.1][+gitN.gSHA][+dirty]: commits after a
	# tag sort after it in dpkg (git describe's -N would read as a semver pre-release),
	# and a pre-release tag sorts before its release.
	echo "${v#v}" | sed -E 's/-dirty$/+dirty/; s/-([0-9]+)-(g[0-9a-f]+)(\+dirty)?$/+git\1.\2\3/; s/^([0-9.]+)-/\1~/; s/\+git([^+]*)\+dirty$/+git\1.dirty/'
	;;
--ldflags)
	pkg=github.com/gpumem/gpumem/internal/version
	echo "-X $pkg.Version=$v -X $pkg.Revision=$rev"
	;;
*)
	echo "usage: $0 [--deb|--revision|--ldflags]" >&2
	exit 2
	;;
esac
