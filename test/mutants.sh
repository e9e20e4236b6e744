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
tree=$tmp/tree
mkdir -p "$tree"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf -) | tar -C "$tree" -xf - || { echo "mutants: cannot copy the tree" >&2; exit 2; }

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

# gotest ARGS [CFLAGS]: go test in the copy; the output is in $tmp/out.
gotest() {
	# shellcheck disable=SC2086 # the test field is words: package, -run, pattern
	(cd "$tree" && CGO_CFLAGS="$CGO_CFLAGS ${2:-}" timeout "$per" go test -count=1 $1) >"$tmp/out" 2>&1
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

caught=0 failed=0 start=$(date +%s)
for i in "${!files[@]}"; do
	f=$tree/${files[$i]}
	cp "$f" "$tmp/orig"
	replace "$f" "${olds[$i]}" "${news[$i]}" || exit 2
	# go's build cache does not hash a C header outside the package's folder: a
	# define of the mutant's own makes cgo build the mutated C.
	extra=""
	case "${files[$i]}" in *.go) ;; *) extra="-DGPUMEM_MUTANT=$((i + 1))" ;; esac
	gotest "${tests[$i]}" "$extra"
	rc=$?
	cp "$tmp/orig" "$f"
	label=$(printf '%2d %s: %s' $((i + 1)) "${files[$i]}" "${whats[$i]}" | cut -c1-110)
	if grep -q '\[build failed\]\|\[setup failed\]' "$tmp/out"; then
		echo "$label -> DOES NOT COMPILE (fix the mutant):"
		grep -m3 '\.go:[0-9]*:' "$tmp/out" | sed 's/^/    /'
		failed=$((failed + 1))
	elif [ "$rc" -eq 0 ]; then
		echo "$label -> SURVIVED (go test ${tests[$i]})"
		failed=$((failed + 1))
	else
		by=$(sed -n 's/^--- FAIL: \([^ /]*\) .*/\1/p' "$tmp/out" | sort -u | head -3 | paste -sd, -)
		if [ -z "$by" ]; then
			case "$rc" in
			124) by="a hang (killed after ${per}s)" ;;
			*) by=$(grep -m1 '^panic:' "$tmp/out" || echo "exit $rc") ;;
			esac
		fi
		echo "$label -> caught by $by"
		caught=$((caught + 1))
	fi
done
echo "$caught of $total mutants caught ($(($(date +%s) - start))s)"
[ "$failed" -eq 0 ]
