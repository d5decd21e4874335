#!/usr/bin/env bash
# Makes the compose fleet's role passwords (docs/deploy.md): one file per
# role that a container reads as /run/secrets/<role>, and nats.env, the
# same passwords as the variables the NATS nodes' configuration names.
# A password that exists is kept, so the fleet and its volumes outlive a
# second call.
#
#   deploy/compose/secrets.sh [DIR]   (default: deploy/compose/secrets)
set -euo pipefail
dir=${1:-$(dirname "$0")/secrets}
mkdir -p "$dir"
chmod 0755 "$dir"
roles=(admin submitter runner staller decider grader meter ops analyst)
env=()
for role in "${roles[@]}"; do
	f=$dir/$role
	if [ ! -s "$f" ]; then
		# 32 random bytes, hex: nothing a NATS configuration would parse.
		od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$f"
	fi
	# The services run as uid 10001 in their images: a service's file is
	# theirs to read and nobody else's when this runs as root (otherwise
	# it is readable by all, for want of a way to give it away). The
	# submitter's, ops' and analyst's are for commands on this machine.
	case $role in
	submitter | ops | analyst) chmod 0600 "$f" ;;
	*) if [ "$(id -u)" -eq 0 ]; then chown 10001:10001 "$f" && chmod 0400 "$f"; else chmod 0444 "$f"; fi ;;
	esac
	env+=("FACTLINE_${role^^}_PASSWORD=$(cat "$f")")
done
printf '%s\n' "${env[@]}" >"$dir/nats.env"
chmod 0600 "$dir/nats.env"
