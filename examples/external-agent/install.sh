#!/bin/sh
# Installs the example's external agents from the npm registry, each into
# /usr/local/lib/factline-agents/<name>-<version> (once; nothing at test
# time, nothing global on PATH): qwen-code (Chat Completions), codex
# (Responses) and claude-code (Messages). The directory is where the
# attempt's own uid may read them (docs/agents.md#containment); making it
# needs root. With names as arguments it installs only those.
#   install.sh [qwen] [codex] [claude]
set -eu
root=/usr/local/lib/factline-agents
[ $# -gt 0 ] || set -- qwen codex claude
command -v npm >/dev/null || { echo "install.sh: npm is needed to install the agents (apt-get install -y npm)" >&2; exit 1; }
for name in "$@"; do
	case $name in
	qwen) pkg=@qwen-code/qwen-code version=0.24.4 bin=qwen ;;
	codex) pkg=@openai/codex version=0.169.0 bin=codex ;;
	claude) pkg=@anthropic-ai/claude-code version=2.1.328 bin=claude ;;
	*) echo "install.sh: unknown agent $name (qwen, codex, claude)" >&2; exit 2 ;;
	esac
	dir=$root/$name-$version
	if [ -x "$dir/node_modules/.bin/$bin" ]; then
		continue
	fi
	echo "installing $pkg@$version into $dir (once) ..." >&2
	mkdir -p "$dir"
	npm install --no-audit --no-fund --loglevel=error --prefix "$dir" "$pkg@$version" >&2
	chmod -R a+rX "$root"
done
