#!/bin/bash
# Installs the Debian packages that building gpumem and running its Slurm lab need.
# Idempotent and quiet: when everything is already there it returns in well under a
# second without touching apt, so `make test` and `make demo` can always call it.
set -euo pipefail

PKGS=(
	slurmctld slurmd slurm-client munge libslurm-dev # the 22.05 lab and the plugins' headers
	slurm-wlm-basic-plugins                            # job_submit/lua for the benchmark
	slurmdbd mariadb-server-core mariadb-client-core   # the lab's accounting (no packaged server is started)
	lua5.1                                             # a lua for checking the benchmark's script
	debootstrap                                        # the 24.11 (trixie) and 26.05 (forky) chroot labs
	rpm cpio                                           # rpm -qp checks of the rpm packages, their files unpacked
	gcc libc6-dev make pkg-config                      # cgo plugins and the submit benchmark
	procps iproute2 ca-certificates
	prometheus # promtool for the rules' unit tests; the lab's own Prometheus
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
# npm installs the zig that builds the packages for glibc 2.28 (packaging/zig.sh). Any
# npm will do (a machine may have Node.js's own, which Debian's npm would conflict with).
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: ${missing[*]}; run as root (or: apt-get install ${missing[*]})" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "deps: installing ${missing[*]}"
# Other apt users may hold the lock (unattended upgrades, a parallel job): wait for it.
apt_opts=(-q -y -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
apt-get "${apt_opts[@]}" update >/dev/null
apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts the freshly installed daemons with its own (empty) config; the lab
# runs its own, so stop the packaged services where systemd is present.
if [ -d /run/systemd/system ]; then
	systemctl disable --now slurmctld slurmd slurmdbd >/dev/null 2>&1 || true
fi
# The same for a Prometheus this run installed (never one the machine already had):
# the lab starts its own, on its own port and data directory.
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
	if [ -d /run/systemd/system ]; then
		systemctl disable --now prometheus >/dev/null 2>&1 || true
	elif [ -x /etc/init.d/prometheus ]; then
		/etc/init.d/prometheus stop >/dev/null 2>&1 || true
	fi
fi
echo "deps: done"
