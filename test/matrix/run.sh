#!/bin/bash
# Runs the whole matrix (every cell of test/matrix on one release's lab, or all three)
# and writes test/matrix/outcomes-RELEASE.tsv, the outcome table the e2e sample checks
# against. Takes each release's lab lock; run as root.
#
#   test/matrix/run.sh [22.05|24.11|26.05|all]      (default: all)
#
# It also refreshes test/matrix/options/RELEASE/COMMAND, the options of the lab's man
# pages, which unit tests and a lab without man pages read.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
release() { (cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release "$@"); }
case "${1:-all}" in
all) mapfile -t releases < <(release names --ci) ;;
*)
	release shell "$1" >/dev/null || {
		echo "usage: $0 [RELEASE|all]; RELEASE: $(release names | tr '\n' ' ')" >&2
		exit 2
	}
	releases=("$1")
	;;
esac
rc=0
for rel in "${releases[@]}"; do
	flock "/tmp/gpumem-lab-$rel.lock" env MATRIX=full E2E_RUN='^TestMatrix$' "$REPO/test/e2e.sh" "$rel" || rc=1
	head -1 "$REPO/test/matrix/outcomes-$rel.tsv" 2>/dev/null
done
exit $rc
