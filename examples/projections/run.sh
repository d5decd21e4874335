#!/usr/bin/env bash
# The analyst's projection in one command: records the demo suite into a
# new store, then replays the store through the tokens projection, which
# prints tokens per turn of every run as JSON. Any store or export works
# the same way: go run ./examples/projections/tokens --store DIR (or
# --file EXPORT).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
# factline: the one on PATH, else one built from this checkout.
factline=$(command -v factline || true)
if [ -z "$factline" ]; then
	go build -o bin/factline ./cmd/factline
	factline=$repo/bin/factline
fi
store=$(mktemp -d "${TMPDIR:-/tmp}/factline-projections.XXXXXX")
trap 'rm -rf "$store"' EXIT
"$factline" run examples/demo/suite.yaml --store "$store" --fsync interval >&2
go run ./examples/projections/tokens --store "$store"
