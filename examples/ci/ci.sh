#!/usr/bin/env bash
# A CI job any CI system can call: run a suite, write its JUnit file, and
# compare it with a stored baseline export, failing on a regression.
#
#   examples/ci/ci.sh SUITE.yaml BASELINE.flx [OUT_DIR]
#
# BASELINE.flx is an export of the same suite from the run you trust (the
# main branch's last, say: factline export 'fact.SUITE.>' --store S --out
# BASELINE.flx), kept as a CI artifact. OUT_DIR (default ./factline-ci)
# receives junit.xml (one test case per attempt, for the CI's test view),
# report/ (report.json, .csv, .svg), compare.md (for a pull request's
# comment) and store/ (the run's log, for factline view or an export).
#
# Environment: FAIL_IF_WORSE, the pass-rate points the suite may lose
# against the baseline (default 5); FAIL_UNDER, a pass rate every
# treatment must reach (0.8 or 80%; default none); FACTLINE, the binary
# (default factline on PATH, else one built from this checkout).
#
# Exit status is factline run's (docs/cli.md): 0 all gates hold, 3 a gate
# failed (a regression), 4 the suite could not complete, 5 every attempt
# was a harness error, 1 or 2 the job itself is wrong (1 too when every
# gate holds but junit.xml or the report files could not be written: a
# full disk; stderr names them and says the gates hold).
set -uo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 SUITE.yaml BASELINE.flx [OUT_DIR]" >&2
	exit 2
fi
suite=$1 baseline=$2 out=${3:-factline-ci}
here=$(cd "$(dirname "$0")" && pwd)
factline=${FACTLINE:-$(command -v factline || true)}
if [ -z "$factline" ]; then
	repo=$(cd "$here/../.." && pwd)
	(cd "$repo" && go build -o bin/factline ./cmd/factline) || exit 1
	factline=$repo/bin/factline
fi
[ -f "$baseline" ] || { echo "$0: no baseline export at $baseline" >&2; exit 2; }
# The suite's name, as the baseline holds it: the file's top-level name:,
# without a comment after it or quotes around it (a name is a subject
# token: it holds neither '#' nor a space).
name=$(sed -n 's/^name:[[:space:]]*//p' "$suite" | head -n 1 | sed 's/[[:space:]]*#.*$//' | tr -d "\"'[:space:]")
[ -n "$name" ] || { echo "$0: $suite has no top-level name:" >&2; exit 2; }
mkdir -p "$out"
rm -rf "$out/store"

gates=(--fail-if-worse "${FAIL_IF_WORSE:-5}")
[ -n "${FAIL_UNDER:-}" ] && gates+=(--fail-under "$FAIL_UNDER")
"$factline" run "$suite" --store "$out/store" --fsync interval \
	--junit "$out/junit.xml" --out "$out/report" \
	--baseline "$name@$baseline" "${gates[@]}"
status=$?
# The comparison for people, whatever the gates said (no gate here: the
# status is run's).
if [ -d "$out/store/jetstream" ]; then
	"$factline" compare "$name@$baseline" "$name@$out/store" --markdown >"$out/compare.md" || true
fi
case $status in
0) echo "factline-ci: $name holds against the baseline" >&2 ;;
3) echo "factline-ci: $name regressed against the baseline or fell under a gate (see above; $out/compare.md)" >&2 ;;
4) echo "factline-ci: $name could not complete" >&2 ;;
5) echo "factline-ci: every attempt of $name was a harness error" >&2 ;;
esac
exit $status
