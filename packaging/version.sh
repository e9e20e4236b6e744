#!/bin/sh
# gpumem's version, for every build: from a git tag (vMAJOR.MINOR.PATCH) when one is
# reachable, else from CHANGELOG.md's newest release heading (## [0.1.0] - DATE) and
# the commit that added it, so that a clone without tags has the release too:
#
#   packaging/version.sh              v0.1.0 (on the tag, or on the commit that cut the
#                                     release in CHANGELOG.md), v0.1.0-3-gabc1234 (3
#                                     commits after it); -dirty with changes
#   packaging/version.sh --deb        0.1.0, 0.1.0+git3.gabc1234
#                                     (dpkg orders these as the commits are ordered)
#   packaging/version.sh --revision   the commit (12 hex digits)
#   packaging/version.sh --ldflags    -X flags that stamp both into internal/version
#
# A tag wins over CHANGELOG.md. A shallow clone counts only the commits it holds and
# never says a bare release (v0.1.0-0-gabc1234 at worst). Without either, the version is
# v0.0.0-N-gabc1234, N the commits in all. VERSION in the environment (v0.1.0 or
# 0.1.0) overrides git, for a source tree without .git.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${VERSION:-}" ]; then
	v=v${VERSION#v}
elif git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	if ! v=$(git -C "$top" describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
		# The newest release heading of CHANGELOG.md as committed, and the last commit
		# that changed how often that heading occurs: the one that cut the release.
		rel=$(git -C "$top" show HEAD:CHANGELOG.md 2>/dev/null |
			sed -n -E 's/^## \[([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?)\] - [0-9]{4}-[0-9]{2}-[0-9]{2}.*/\1/p' | head -n 1)
		cut=
		[ -z "$rel" ] || cut=$(git -C "$top" log -1 --format=%H -S"## [$rel] - " HEAD -- CHANGELOG.md)
		hash=$(git -C "$top" rev-parse --short=7 HEAD)
		if [ -n "$cut" ]; then
			n=$(git -C "$top" rev-list --count "$cut..HEAD")
			if [ "$n" = 0 ] && [ "$(git -C "$top" rev-parse --is-shallow-repository)" = false ]; then
				v=v$rel
			else
				v=v$rel-$n-g$hash
			fi
		else
			v=v0.0.0-$(git -C "$top" rev-list --count HEAD)-g$hash
		fi
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
