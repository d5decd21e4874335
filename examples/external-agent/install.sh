#!/bin/sh
# Installs the example's external agent, qwen-code, from the npm registry
# into .cache next to this script (nothing global, nothing at test time).
# Needs node and npm; qwen-code asks for node >= 22 but runs on 20.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
version=0.24.4
if [ -x "$here/.cache/node_modules/.bin/qwen" ]; then
	exit 0
fi
command -v npm >/dev/null || { echo "install.sh: npm is needed to install qwen-code (apt-get install -y npm)" >&2; exit 1; }
echo "installing @qwen-code/qwen-code@$version into $here/.cache (once) ..." >&2
mkdir -p "$here/.cache"
npm install --no-audit --no-fund --loglevel=error --prefix "$here/.cache" "@qwen-code/qwen-code@$version" >&2
