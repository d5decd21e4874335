#!/usr/bin/env bash
# Builds the example's environment image from the static busybox (Debian's
# busybox-static): a root file system of busybox and its applets, plus a
# tool this host does not have, /usr/local/bin/colsum. Images are never
# pulled: the engine (FACTLINE_CONTAINER_ENGINE, podman by default) only
# imports this one.
set -euo pipefail
engine=${FACTLINE_CONTAINER_ENGINE:-podman}
image=localhost/factline-example-tools:1
busybox=${BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || { echo "no $busybox: apt-get install busybox-static" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,etc,tmp,workspace,proc,sys,dev,usr/local/bin}
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
# The tool the case needs: sums one column of whitespace-separated numbers.
cat > "$root/usr/local/bin/colsum" <<'TOOL'
#!/bin/sh
# colsum N: the sum of column N (default 1) of standard input.
exec awk -v c="${1:-1}" '{ s += $c } END { print s }'
TOOL
chmod 755 "$root/usr/local/bin/colsum"
old=$("$engine" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
tar -C "$root" -c . | "$engine" import - "$image" >/dev/null
# The image built before (the tag moved off it) goes, unless a container
# still uses it.
new=$("$engine" image inspect --format '{{.Id}}' "$image")
if [ -n "$old" ] && [ "$old" != "$new" ]; then "$engine" rmi "$old" >/dev/null 2>&1 || true; fi
echo "built $image: $("$engine" image inspect --format '{{.Id}}' "$image")"
