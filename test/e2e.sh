#!/bin/bash
# End-to-end tests of gpumem in the real-Slurm lab, on one release or all of CI's.
#
#   test/e2e.sh [--list] [RELEASE|RELEASE-KIND|all]      (default: $LAB_SLURM, else 22.05)
#
# RELEASE is a row of the release table (internal/slurmrel/releases.txt); KIND is one of
# configless, fence, typed, scale. Installs what is missing (test/lab/deps.sh), builds
# bin/, starts each lab afresh, runs the Go tests in test/e2e (build tag e2e) against
# it, and leaves each lab as it found it (up or down). RELEASE alone is the main pass;
# RELEASE-typed is that lab with per-GPU typed shards (LAB_SHARD_TYPES=per-gpu), where
# the pinning tests and the 20,000-job submit storm run; RELEASE-scale is a nine-node lab
# of three GPU models (LAB_SCALE=9) where the small version of the cluster-scale
# steering comparison runs (test/steer/scale.sh); RELEASE-configless is the lab as a
# configless cluster (LAB_CONFIGLESS=1), where the submit and configless tests run;
# RELEASE-fence is the lab with the driver fence's hook on every node (LAB_FENCE=1,
# test/lab/fence.sh), where the fence tests run. `all` runs, for each release the table
# marks for CI (Debian's: CI has no source trees), its main, configless and fence
# passes, and the typed and scale passes on the first of them whose Slurm has typed
# shards and CgroupPlugin=disabled (the typed-shards and cgroup-disabled gates).
# --list prints the passes it would run, one a line, and runs none.
# Each pass, and the run at its end, counts the tests passed, failed and skipped
# ("N passed, N failed, N skipped"); test/e2e/required.txt names the tests that must run
# in each kind of pass, and one that skipped or did not run there fails the run (with
# E2E_RUN, only those the pattern names). Run as root.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB=$REPO/test/lab/lab.sh
list=0
[ "${1:-}" = --list ] && list=1 && shift
which=${1:-${LAB_SLURM:-$(cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release names --host)}}
release() { (cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release "$@"); }
usage() {
	echo "usage: $0 [--list] [RELEASE|RELEASE-configless|RELEASE-fence|RELEASE-typed|RELEASE-scale|all]; RELEASE: $(release names | tr '\n' ' ')" >&2
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
	"$which" | configless | fence | typed | scale) ;;
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
# required KIND prints the tests test/e2e/required.txt requires of a pass of KIND (main,
# configless, fence, typed, scale), one a line.
required() {
	awk -v pass="$1" '!/^#/ && NF > 1 { n = split($1, ps, ","); for (i = 1; i <= n; i++) if (ps[i] == pass) { for (j = 2; j <= NF; j++) print $j } }' "$REPO/test/e2e/required.txt"
}
# skipReason LOG TEST prints what TEST logged last before it skipped (its t.Skip reason).
skipReason() {
	awk -v t="$2" '
		/^=== (RUN|CONT|NAME|PAUSE)/ { mine = ($3 == t); next }
		/^--- / { mine = 0; next }
		mine && /^[[:space:]]+[a-z_0-9]+_test\.go:[0-9]+:/ { sub(/^[[:space:]]+/, ""); why = $0 }
		END { print why }
	' "$1"
}
# failedLines LOG N prints, for each failed top-level test in a `go test -v` log, its FAIL
# line and the first N lines it logged itself: those between its "=== RUN" and its
# result, or after a "=== CONT"/"=== NAME" of it (never another test's lines).
failedLines() {
	local t
	for t in $(sed -n 's/^--- FAIL: \([^ ]*\).*/\1/p' "$1"); do
		grep -m1 "^--- FAIL: $t " "$1"
		awk -v t="$t" -v max="$2" '
			/^=== (RUN|CONT|NAME|PAUSE)/ { mine = ($3 == t || index($3, t "/") == 1); next }
			/^--- / || /^(PASS|FAIL|ok) / { mine = 0; next }
			mine && /^[[:space:]]+[a-z_0-9]+_test\.go:[0-9]+:/ { print; if (++n == max) exit }
		' "$1"
	done
}
# What failed, repeated at the very end: a CI log is often read from its tail.
failures=()
for pass in "${releases[@]}"; do
	rel=${pass%%-*} kind=${pass#*-} types=none run=. configless=0 fence=0 scale=
	[ "$kind" = "$pass" ] && kind=main
	case "$pass" in
	# Only the fence tests: with Contain every job runs an extern step, and in the lab
	# (several slurmd on one host) a multi-node GPU job's extern step has crashed
	# slurmstepd on 24.11 (docs/gpumemd.md), which the other tests' jobs would meet.
	*-fence) fence=1 run='^TestFence' ;;
	*-typed) types=per-gpu run='Pin|Storm' ;;
	# The small version of test/steer/scale.sh, on nine nodes of three GPU models.
	*-scale) types=per-gpu scale=${E2E_SCALE:-9} run='^TestSteeringAtScale$' ;; # E2E_SCALE: another node count
	*-configless) configless=1 run='^Test(SrunGpuMemLandsOnGPUWithRoom|SbatchDirectiveAndSteps|SallocAndStep|ConcurrentJobsNeverOvercommit|Configless.*)$' ;; # submit_test.go, configless_test.go
	esac
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
		failures+=("e2e[$pass]: the lab did not start")
		while IFS= read -r l; do failures+=("e2e[$pass]:   $l"); done < <(grep -v '^\[' "$uplog" | tail -15)
		# What a failed start left running goes too, unless the lab was up before.
		[ "$was_up" -eq 1 ] || LAB_SLURM=$rel LAB_CONFIGLESS=$configless "$LAB" down >/dev/null
		continue
	fi
	echo "e2e[$pass]: lab up in $(($(date +%s) - start))s; running tests (log: $log)"
	# The configless lab's clients are a login node's: gpumem.conf from GPUMEM_CONF.
	login=(env)
	[ "$configless" = 1 ] && login+=(GPUMEM_CONF=/var/lib/gpumem-lab/$rel/login/gpumem.conf)
	(cd "$REPO" && "${login[@]}" LAB_SLURM=$rel LAB_CONFIGLESS=$configless LAB_SCALE=$scale go test -tags e2e -count=1 -v -timeout 40m -run "$run" ./test/e2e/) >"$log" 2>&1
	# Top-level results only: a subtest's failure also fails its parent.
	p=$(grep -c '^--- PASS' "$log")
	f=$(grep -c '^--- FAIL' "$log")
	s=$(grep -c '^--- SKIP' "$log")
	grep -E '^--- (PASS|FAIL|SKIP)' "$log" | sed "s/^/e2e[$pass]: /"
	# A required test that skipped or never ran checked nothing: that fails the pass.
	missing=()
	# (A pass without any result has failed already; its list would only repeat that.)
	grep -q '^--- ' "$log" && for t in $(required "$kind"); do
		[ -n "${E2E_RUN:-}" ] && ! [[ "$t" =~ ${E2E_RUN%%/*} ]] && continue
		if grep -q "^--- SKIP: $t " "$log"; then
			missing+=("required test $t skipped: $(skipReason "$log" "$t")")
		elif ! grep -q "^--- \(PASS\|FAIL\): $t " "$log"; then
			missing+=("required test $t did not run")
		fi
	done
	for l in "${missing[@]}"; do
		echo "e2e[$pass]: $l"
		failures+=("e2e[$pass]: $l")
	done
	f=$((f + ${#missing[@]}))
	if [ "$f" -gt 0 ] || ! grep -q '^ok ' "$log"; then
		failedLines "$log" 20 | sed "s/^/e2e[$pass]: /"
		grep -q '^ok \|^--- FAIL' "$log" || {
			tail -20 "$log"
			f=$((f + 1))
		}
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	if [ "$f" -gt "${#missing[@]}" ]; then
		before=${#failures[@]}
		while IFS= read -r l; do failures+=("e2e[$pass]: $l"); done < <(failedLines "$log" 8)
		[ "${#failures[@]}" -gt "$before" ] || failures+=("e2e[$pass]: no test result (see $log)")
	fi
	echo "e2e[$pass]: $p passed, $f failed, $s skipped in $(($(date +%s) - start))s"
	if [ "$was_up" -eq 0 ]; then
		LAB_SLURM=$rel LAB_CONFIGLESS=$configless "$LAB" down >/dev/null
	elif [ "$pass" != "$rel" ]; then # it was up plain: leave it so
		LAB_SLURM=$rel "$LAB" up >/dev/null
	fi
done
if [ "${#failures[@]}" -gt 0 ]; then
	echo "what failed:"
	printf '  %s\n' "${failures[@]}" | cut -c1-400
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
