#!/bin/bash
# End-to-end tests of gpumem in the real-Slurm lab, on one release or all of CI's.
#
#   test/e2e.sh [--list] [RELEASE|RELEASE-KIND|all]      (default: $LAB_SLURM, else 22.05)
#
# RELEASE is a row of the release table (internal/slurmrel/releases.txt); KIND is one of
# configless, fence, typed, scale, faults. Installs what is missing (test/lab/deps.sh), builds
# bin/, starts each lab afresh, runs the Go tests in test/e2e (build tag e2e) against
# it, and leaves each lab as it found it (up or down). RELEASE alone is the main pass;
# RELEASE-typed is that lab with per-GPU typed shards (LAB_SHARD_TYPES=per-gpu), where
# the pinning tests and the 20,000-job submit storm run; RELEASE-scale is a nine-node lab
# of three GPU models (LAB_SCALE=9) where the small version of the cluster-scale
# steering comparison runs (test/steer/scale.sh); RELEASE-configless is the lab as a
# configless cluster (LAB_CONFIGLESS=1), where the submit and configless tests run;
# RELEASE-fence is the lab with the driver fence's hook on every node (LAB_FENCE=1,
# test/lab/fence.sh), where the fence tests run; RELEASE-faults is the plain lab running
# the fault matrix's rows (test/faults.sh runs it). `all` runs, for each release the table
# marks for CI (Debian's: CI has no source trees), its main, configless and fence
# passes, and the typed and scale passes on the first of them whose Slurm has typed
# shards and CgroupPlugin=disabled (the typed-shards and cgroup-disabled gates).
# --list prints the passes it would run, one a line, and runs none.
# A pass runs the tests test/e2e/required.txt names for its kind, and each must pass
# there: one that skipped or did not run fails the run (with E2E_RUN, which replaces the
# pass's -run, only those the pattern names are required). Each pass, and the run at its
# end, counts the tests passed, failed and skipped ("N passed, N failed, N skipped"),
# read from go test -json by test/e2ereport. Run as root.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB=$REPO/test/lab/lab.sh
list=0
[ "${1:-}" = --list ] && list=1 && shift
which=${1:-${LAB_SLURM:-$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names --host)}}
release() { (cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release "$@"); }
usage() {
	echo "usage: $0 [--list] [RELEASE|RELEASE-configless|RELEASE-fence|RELEASE-typed|RELEASE-scale|RELEASE-faults|all]; RELEASE: $(release names | tr '\n' ' ')" >&2
	exit 2
}
if [ "$which" = all ]; then
	releases=()
	extra=$(release names --ci --gate typed-shards --gate cgroup-disabled | head -1)
	for r in $(release names --ci); do
		if [ "$r" = "$extra" ]; then
			releases+=("$r" "$r-typed" "$r-scale" "$r-configless" "$r-fence")
		else
			releases+=("$r" "$r-configless" "$r-fence")
		fi
	done
else
	case "${which#*-}" in
	"$which" | configless | fence | typed | scale | faults) ;;
	*) usage ;;
	esac
	release shell "${which%%-*}" >/dev/null || usage
	releases=("$which")
fi
if [ "$list" = 1 ]; then
	printf '%s\n' "${releases[@]}"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || {
	echo "e2e: the lab starts Slurm daemons: run as root" >&2
	exit 2
}

"$REPO/test/lab/deps.sh" || exit 1
make -s -C "$REPO" build >/dev/null || {
	echo "e2e: make build failed" >&2
	exit 1
}
# Compile first: a broken test should not cost a lab start.
(cd "$REPO" && go vet -tags e2e ./test/e2e/) || exit 1

mkdir -p "$REPO/test/lab/.state"
passed=0 failed=0 skipped=0
# e2ereport reads test/e2e/required.txt (what each kind of pass runs) and a pass's
# go test -json.
(cd "$REPO" && go build -o test/lab/.state/e2ereport ./test/e2ereport) || exit 1
e2ereport() { (cd "$REPO" && test/lab/.state/e2ereport "$@"); }
# What failed, repeated at the very end: a CI log is often read from its tail.
failures=$REPO/test/lab/.state/e2e-failures
: >"$failures"
for pass in "${releases[@]}"; do
	rel=${pass%%-*} kind=${pass#*-} types=none configless=0 fence=0 scale=
	[ "$kind" = "$pass" ] && kind=main
	case "$kind" in
	# With Contain every job runs an extern step, and in the lab (several slurmd on one
	# host) a multi-node GPU job's extern step has crashed slurmstepd on 24.11
	# (docs/gpumemd.md), which the other tests' jobs would meet: only fence tests here.
	fence) fence=1 ;;
	typed) types=per-gpu ;;
	# The small version of test/steer/scale.sh, on nine nodes of three GPU models.
	scale) types=per-gpu scale=${E2E_SCALE:-9} ;; # E2E_SCALE: another node count
	configless) configless=1 ;;
	esac
	# What a pass runs is its kind's line in test/e2e/required.txt.
	run=$(e2ereport run "$kind") || exit 2
	# E2E_RUN narrows a pass to the tests a developer is working on (go test -run).
	run=${E2E_RUN:-$run}
	log=$REPO/test/lab/.state/e2e-$pass.log
	was_up=0
	LAB_SLURM=$rel "$LAB" status >/dev/null 2>&1 && was_up=1
	if [ "$was_up" -eq 1 ] && [ "$pass" != "$rel" ]; then
		echo "e2e[$pass]: the $rel lab is up; it is restarted as $pass" >&2
		LAB_SLURM=$rel "$LAB" down >/dev/null
	fi
	start=$(date +%s)
	# The lab's own words on a failed start go into the summary too: a CI log is read
	# from its tail, and "did not start" alone leaves nothing to go on.
	uplog=$REPO/test/lab/.state/up-$pass.log
	up=0
	LAB_SLURM=$rel LAB_SHARD_TYPES=$types LAB_CONFIGLESS=$configless LAB_FENCE=$fence LAB_SCALE=$scale "$LAB" up 2>"$uplog" || up=$?
	cat "$uplog" >&2
	if [ "$up" -ne 0 ]; then
		echo "e2e[$pass]: the lab did not start" >&2
		failed=$((failed + 1))
		{
			echo "e2e[$pass]: the lab did not start"
			grep -v '^\[' "$uplog" | tail -15 | sed "s/^/e2e[$pass]:   /"
		} >>"$failures"
		# What a failed start left running goes too, unless the lab was up before.
		[ "$was_up" -eq 1 ] || LAB_SLURM=$rel LAB_CONFIGLESS=$configless "$LAB" down >/dev/null
		continue
	fi
	echo "e2e[$pass]: lab up in $(($(date +%s) - start))s; running tests (log: $log)"
	# The configless lab's clients are a login node's: gpumem.conf from GPUMEM_CONF.
	login=(env)
	[ "$configless" = 1 ] && login+=(GPUMEM_CONF=/var/lib/gpumem-lab/$rel/login/gpumem.conf)
	counts=$REPO/test/lab/.state/e2e-$pass.counts
	rm -f "$counts"
	(cd "$REPO" && "${login[@]}" LAB_SLURM=$rel LAB_CONFIGLESS=$configless LAB_SCALE=$scale go test -tags e2e -count=1 -json -timeout 40m -run "$run" ./test/e2e/) 2>&1 |
		e2ereport report -pass "$pass" -kind "$kind" -only "${E2E_RUN:-}" -log "$log" -failures "$failures" -counts "$counts"
	read -r p f s <"$counts" || { p=0 f=1 s=0; echo "e2e[$pass]: no result read" | tee -a "$failures"; }
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	echo "e2e[$pass]: $p passed, $f failed, $s skipped in $(($(date +%s) - start))s"
	if [ "$was_up" -eq 0 ]; then
		LAB_SLURM=$rel LAB_CONFIGLESS=$configless "$LAB" down >/dev/null
	elif [ "$pass" != "$rel" ]; then # it was up plain: leave it so
		LAB_SLURM=$rel "$LAB" up >/dev/null
	fi
done
if [ -s "$failures" ]; then
	echo "what failed:"
	sed 's/^/  /' "$failures" | cut -c1-400
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
