#!/usr/bin/env bash
# The CI example in one command: records a baseline (what the main
# branch's last run would have stored), then runs the CI job against it.
#
#   examples/ci/run.sh [DIR]   (default: a new temporary directory, removed afterwards)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
factline=$(command -v factline || true)
if [ -z "$factline" ]; then
	(cd "$repo" && go build -o bin/factline ./cmd/factline)
	factline=$repo/bin/factline
fi
dir=${1:-}
if [ -z "$dir" ]; then
	dir=$(mktemp -d "${TMPDIR:-/tmp}/factline-ci.XXXXXX")
	trap 'rm -rf "$dir"' EXIT
fi
# The baseline: a run of the suite, exported.
"$factline" run "$here/suite.yaml" --store "$dir/main" --fsync interval >/dev/null
"$factline" export 'fact.ci-demo.>' --store "$dir/main" --out "$dir/baseline.flx"
# The job, as CI calls it on a change.
FACTLINE=$factline "$here/ci.sh" "$here/suite.yaml" "$dir/baseline.flx" "$dir/out"
cat "$dir/out/compare.md"
