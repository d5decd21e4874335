#!/usr/bin/env bash
# The calibration example in one command: records the suite (the stall
# handler off, so every run goes on until it ends by itself) into a store,
# then replays it under the policies in policies/ with factline whatif.
#
#   examples/calibration/run.sh [STORE]   (default: a new temporary store, removed afterwards)
#
# Given a STORE, it is kept, and a second call replays it without
# recording again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# factline: the one on PATH, else one built from this checkout.
factline=$(command -v factline || true)
if [ -z "$factline" ]; then
	(cd "$repo" && go build -o bin/factline ./cmd/factline)
	factline=$repo/bin/factline
fi
store=${1:-}
if [ -z "$store" ]; then
	store=$(mktemp -d "${TMPDIR:-/tmp}/factline-calibration.XXXXXX")
	trap 'rm -rf "$store"' EXIT
fi
if ! "$factline" report calibration --store "$store" >/dev/null 2>&1; then
	"$factline" run "$here/suite.yaml" --store "$store" --fsync interval
fi
"$factline" whatif calibration --store "$store" \
	--policy "$here/policies/defaults.yaml" \
	--policy "$here/policies/strict.yaml" \
	--policy "$here/policies/patient.yaml"
