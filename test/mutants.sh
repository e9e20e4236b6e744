#!/bin/bash
# The mutation check: applies, one at a time, each small breaking change listed in
# test/mutants.txt to a copy of the tree and runs the unit tests of the package it
# names. A mutant is caught when those tests fail; one that survives is a decision no
# test guards. Prints one line per mutant and "N of M mutants caught"; exits non-zero
# when one survived, no longer applies, or does not compile, or when the unmutated
# tests fail (then "caught" would mean nothing).
#
#   test/mutants.sh [LIST]   (default test/mutants.txt; MUTANTS_ONLY=REGEX narrows to
#                             the mutants whose comment or file matches;
#                             MUTANTS_UNIT_PASSED=1 skips the unmutated run, which
#                             make unit has just done)
#
# The copy is the working tree as it is (tracked and untracked files git does not
# ignore), in a temporary directory removed on exit; the working tree is never changed.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list=${1:-$REPO/test/mutants.txt}
export CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}
# One mutant's tests never run longer than this; a hang counts as caught, and says so.
per=${MUTANTS_TIMEOUT:-300}

# Parse the list into parallel arrays.
files=() tests=() olds=() news=() whats=()
what="" file="" test="" old="" new="" n=0 bad=0
flush() {
	if [ -n "$file$test$old$new" ]; then
		n=$((n + 1))
		if [ -z "$file" ] || [ -z "$test" ] || [ -z "$old" ] || [ -z "$new" ]; then
			echo "mutants: record $n ($what) lacks file:, test:, old: or new:" >&2
			bad=1
		fi
		if [ -z "${MUTANTS_ONLY:-}" ] || [[ "$what $file" =~ $MUTANTS_ONLY ]]; then
			files+=("$file") tests+=("$test") olds+=("$old") news+=("$new") whats+=("$what")
		fi
	fi
	what="" file="" test="" old="" new=""
}
while IFS= read -r line || [ -n "$line" ]; do
	case "$line" in
	'') flush ;;
	'# '*) [ -z "$file" ] && what="${what:+$what }${line#\# }" ;;
	'#'*) ;;
	file:*) file=$(echo "${line#file:}" | sed 's/^ *//') ;;
	test:*) test=$(echo "${line#test:}" | sed 's/^ *//') ;;
	old:*) old=${line#old: } ;;
	new:*) new=${line#new: } ;;
	*) echo "mutants: $list: cannot read line: $line" >&2; bad=1 ;;
	esac
done <"$list"
flush
[ "$bad" -eq 0 ] || exit 2
total=${#files[@]}
[ "$total" -gt 0 ] || { echo "mutants: no mutant in $list" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-mutants.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# One copy of the tree per worker: mutants run MUTANTS_JOBS at a time (default: the
# machine's cores, at most 4), each worker on its own copy, every result printed in
# the list's order.
jobs=${MUTANTS_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
[ "$jobs" -le 4 ] || jobs=4
tree=$tmp/tree
mkdir -p "$tree"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf -) | tar -C "$tree" -xf - || { echo "mutants: cannot copy the tree" >&2; exit 2; }
for ((w = 1; w < jobs; w++)); do
	cp -a "$tree" "$tmp/tree$w" || { echo "mutants: cannot copy the tree" >&2; exit 2; }
done

# replace FILE OLD NEW: OLD must occur exactly once in FILE.
replace() {
	perl -e '
		my ($f, $o, $n) = @ARGV;
		open(my $in, "<", $f) or die "mutants: $f: $!\n";
		my $s = do { local $/; <$in> };
		close $in;
		my $c = () = $s =~ /\Q$o\E/g;
		if ($c != 1) { print STDERR "found $c times\n"; exit 3 }
		$s =~ s/\Q$o\E/$n/;
		open(my $out, ">", $f) or die "mutants: $f: $!\n";
		print $out $s;
		close $out or die "mutants: $f: $!\n";
	' "$@"
}

# Every mutant must apply before any runs: a stale one fails the run at once.
for i in "${!files[@]}"; do
	f=$tree/${files[$i]}
	cp "$f" "$tmp/orig" 2>/dev/null || { echo "mutants: mutant $((i + 1)) (${whats[$i]}): ${files[$i]} does not exist" >&2; bad=1; continue; }
	if ! why=$(replace "$f" "${olds[$i]}" "${news[$i]}" 2>&1); then
		echo "mutants: mutant $((i + 1)) no longer applies: in ${files[$i]} its old text \"${olds[$i]}\" is $why: rewrite it in $list" >&2
		bad=1
	fi
	cp "$tmp/orig" "$f"
done
[ "$bad" -eq 0 ] || exit 2

# gotest ARGS [CFLAGS] [TREE] [OUT]: go test in a copy (the first by default); the
# output is in OUT ($tmp/out by default).
gotest() {
	# shellcheck disable=SC2086 # the test field is words: package, -run, pattern
	(cd "${3:-$tree}" && CGO_CFLAGS="$CGO_CFLAGS ${2:-}" timeout "$per" go test -count=1 $1) >"${4:-$tmp/out}" 2>&1
}

# The unmutated tests must pass, once per distinct test field; `make mutants` says they
# just did (MUTANTS_UNIT_PASSED=1: it runs after make unit, every test of the same tree).
declare -A seen
[ "${MUTANTS_UNIT_PASSED:-0}" = 1 ] && tests_to_check=() || tests_to_check=("${tests[@]}")
for t in "${tests_to_check[@]}"; do
	[ -n "${seen[$t]:-}" ] && continue
	seen[$t]=1
	if ! gotest "$t"; then
		echo "mutants: the unmutated tests fail (go test $t); fix them first:" >&2
		tail -20 "$tmp/out" >&2
		exit 2
	fi
done

# one I TREE runs mutant I in TREE and writes its verdict line to $tmp/verdict.I:
# "caught LABEL", or "failed LABEL" with the lines that say why.
one() {
	local i=$1 t=$2 f out=$tmp/out.$1 extra="" rc label by
	f=$t/${files[$i]}
	cp "$f" "$f.mutant-orig"
	replace "$f" "${olds[$i]}" "${news[$i]}" || { echo "failed $i: no longer applies" >"$tmp/verdict.$i"; return; }
	# go's build cache does not hash a C header outside the package's folder: a
	# define of the mutant's own makes cgo build the mutated C.
	case "${files[$i]}" in *.go) ;; *) extra="-DGPUMEM_MUTANT=$((i + 1))" ;; esac
	gotest "${tests[$i]}" "$extra" "$t" "$out"
	rc=$?
	mv "$f.mutant-orig" "$f"
	label=$(printf '%2d %s: %s' $((i + 1)) "${files[$i]}" "${whats[$i]}" | cut -c1-110)
	if grep -q '\[build failed\]\|\[setup failed\]' "$out"; then
		{
			echo "failed $label -> DOES NOT COMPILE (fix the mutant):"
			grep -m3 '\.go:[0-9]*:' "$out" | sed 's/^/    /'
		} >"$tmp/verdict.$i"
	elif [ "$rc" -eq 0 ]; then
		echo "failed $label -> SURVIVED (go test ${tests[$i]})" >"$tmp/verdict.$i"
	else
		by=$(sed -n 's/^--- FAIL: \([^ /]*\) .*/\1/p' "$out" | sort -u | head -3 | paste -sd, -)
		if [ -z "$by" ]; then
			case "$rc" in
			124) by="a hang (killed after ${per}s)" ;;
			*) by=$(grep -m1 '^panic:' "$out" || echo "exit $rc") ;;
			esac
		fi
		echo "caught $label -> caught by $by" >"$tmp/verdict.$i"
	fi
}

caught=0 failed=0 start=$(date +%s)
for ((w = 0; w < jobs; w++)); do
	t=$tree
	[ "$w" -eq 0 ] || t=$tmp/tree$w
	(for ((i = w; i < total; i += jobs)); do one "$i" "$t"; done) &
done
wait
for ((i = 0; i < total; i++)); do
	v=$(cat "$tmp/verdict.$i" 2>/dev/null || echo "failed $((i + 1)): no verdict")
	case "$v" in
	caught\ *) echo "${v#caught }"; caught=$((caught + 1)) ;;
	*) echo "${v#failed }"; failed=$((failed + 1)) ;;
	esac
done
echo "$caught of $total mutants caught ($(($(date +%s) - start))s)"
[ "$failed" -eq 0 ]
