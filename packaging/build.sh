#!/bin/sh
# Build the gpumem .deb from what `make build` put in bin/: gpumemd, gpumemctl, the Slurm
# plugins (when built), the systemd unit and example configuration.
#
#   packaging/build.sh [BINDIR] [OUTDIR]     (defaults: bin dist)
#
# The package version comes from git tags (packaging/version.sh --deb); VERSION=v0.1.0
# overrides it for a tree without .git. The package carries gpumem's license, the
# third-party notices and a Debian copyright file under /usr/share/doc/gpumem/.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin=${1:-$top/bin}
out=${2:-$top/dist}
for f in gpumemd gpumemctl; do
	if [ ! -x "$bin/$f" ]; then
		echo "$0: $bin/$f missing: run make build first" >&2
		exit 1
	fi
done
command -v dpkg-deb >/dev/null || { echo "$0: dpkg-deb not found (apt-get install dpkg)" >&2; exit 1; }

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
version=$("$here/version.sh" --deb)

root=$(mktemp -d)
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
install -D -m 0755 "$bin/gpumemd" "$root/usr/sbin/gpumemd"
install -D -m 0755 "$bin/gpumemctl" "$root/usr/bin/gpumemctl"
install -D -m 0755 "$here/gpumemd-task-prolog" "$root/usr/sbin/gpumemd-task-prolog"
# Debian's slurm-wlm loads plugins from here.
plugins=0
for so in job_submit_gpumem.so cli_filter_gpumem.so; do
	if [ -f "$bin/$so" ]; then
		install -D -m 0644 "$bin/$so" "$root/usr/lib/$multiarch/slurm-wlm/$so"
		plugins=$((plugins + 1))
	fi
done
install -D -m 0644 "$here/systemd/gpumemd.service" "$root/lib/systemd/system/gpumemd.service"
install -D -m 0644 "$here/examples/gpumemd.default" "$root/etc/default/gpumemd"
doc=$root/usr/share/doc/gpumem
for f in "$here"/examples/gpumemd.conf "$here"/examples/web-config.yml "$top"/slurm-conf/gpumem.conf; do
	[ -f "$f" ] && install -D -m 0644 "$f" "$doc/examples/$(basename "$f")"
done
[ -f "$top/docs/gpumemd.md" ] && install -D -m 0644 "$top/docs/gpumemd.md" "$doc/gpumemd.md"
# The licenses every copy must carry (Apache-2.0 section 4, and each dependency's own).
for f in LICENSE NOTICE THIRD_PARTY_NOTICES.md CHANGELOG.md SECURITY.md packaging/copyright; do
	install -D -m 0644 "$top/$f" "$doc/$(basename "$f")"
done
install -d -m 0755 "$root/var/lib/gpumem"
# Prometheus rules, their unit tests, a scrape example and the Grafana dashboard.
for f in gpumem-rules.yml gpumem-rules.test.yml prometheus.yml gpumem-dashboard.json; do
	install -D -m 0644 "$here/monitoring/$f" "$root/usr/share/gpumem/monitoring/$f"
done

mkdir -p "$root/DEBIAN"
size=$(du -sk "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: gpumem
Version: $version
Architecture: $arch
Maintainer: gpumem maintainers <gpumem@localhost>
Installed-Size: $size
Depends: libc6
Recommends: slurm-client
Suggests: slurmd, slurmctld
Section: admin
Priority: optional
Description: GPU-memory-aware scheduling for Slurm
 Lets users ask Slurm for GPU memory (--gres=gpu:mem:20g) instead of GPUs.
 Contains the gpumemd node sidecar (NVML inventory, gres.conf, Prometheus
 metrics, per-job GPU memory enforcement and history), the gpumemctl admin
 CLI, and the job_submit and cli_filter plugins.
CONTROL
echo /etc/default/gpumemd >"$root/DEBIAN/conffiles"
cat >"$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
# Installed but not started: gpumemd writes gres.conf and may drain nodes, so an admin
# enables it (systemctl enable --now gpumemd) once gpumem.conf says what it may do.
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
POSTINST
cat >"$root/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl stop gpumemd.service || true
fi
PRERM
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm"

mkdir -p "$out"
deb=$out/gpumem_${version}_$arch.deb
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "built $deb ($plugins plugin(s))"
