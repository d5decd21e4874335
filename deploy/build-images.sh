#!/usr/bin/env bash
# Builds factline's container images from this checkout, with nothing
# pulled from an image registry: each image is FROM scratch, and its root
# file system is a build context made here from binaries this machine
# builds (factline, nats-server) or Debian installs (busybox-static,
# bash-static, prometheus). docs/deploy.md describes the images.
#
#   deploy/build-images.sh [-t TAG] [factline|nats|prometheus ...]
#
# With no image named it builds all three, tagged TAG (default: the
# checkout's short revision, with -dirty when it has changes) and latest:
#   localhost/factline:TAG            factline, bash and busybox (runs every service)
#   localhost/factline-nats:TAG       nats-server, built from the module in go.mod
#   localhost/factline-prometheus:TAG Debian's prometheus and the C library it needs
# The engine is $FACTLINE_CONTAINER_ENGINE (podman by default; docker works too).
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${FACTLINE_CONTAINER_ENGINE:-podman}
go=${GO:-go}
tag=""
while getopts t: opt; do
	case $opt in
	t) tag=$OPTARG ;;
	*) echo "usage: $0 [-t TAG] [factline|nats|prometheus ...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
images=("$@")
[ ${#images[@]} -gt 0 ] || images=(factline nats prometheus)

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -z "$tag" ]; then
	tag=$(git rev-parse --short=12 HEAD 2>/dev/null || echo dev)
	[ -z "$(git status --porcelain 2>/dev/null)" ] || tag="$tag-dirty"
fi
work=bin/deploy
mkdir -p "$work"

need() {
	[ -x "$1" ] || { echo "no $1: apt-get install $2" >&2; exit 1; }
}

# newroot DIR: an empty root file system with /tmp and the users the
# images run as (factline 10001, nobody 65534).
newroot() {
	rm -rf "$1"
	mkdir -p "$1"/{bin,etc,tmp,usr/local/bin}
	chmod 1777 "$1/tmp"
	cat > "$1/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
factline:x:10001:10001:factline:/var/lib/factline:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
	cat > "$1/etc/group" <<'GROUP'
root:x:0:
factline:x:10001:
nogroup:x:65534:
GROUP
}

# build NAME CONTEXT CONTAINERFILE: the image, tagged TAG and latest; the
# image the latest tag left is removed unless a container still uses it.
build() {
	local image=localhost/$1 old
	old=$("$engine" image inspect --format '{{.Id}}' "$image:latest" 2>/dev/null || true)
	"$engine" build --quiet --no-cache --build-arg "REVISION=$revision" \
		-f "$3" -t "$image:$tag" -t "$image:latest" "$2" >/dev/null
	local new
	new=$("$engine" image inspect --format '{{.Id}}' "$image:$tag")
	if [ -n "$old" ] && [ "$old" != "$new" ]; then "$engine" rmi "$old" >/dev/null 2>&1 || true; fi
	echo "built $image:$tag ($new)"
}

factline_image() {
	local ctx=$work/factline root=$work/factline/rootfs
	need /bin/busybox busybox-static
	need /bin/bash-static bash-static
	newroot "$root"
	mkdir -p "$root/etc/ssl/certs" "$ctx/home"
	# Static, and stamped with the checkout's revision: factline version
	# in the image names the build (version/). Go stamps nothing in a git
	# worktree (its .git is a file, and go looks for a directory), so
	# there the binary is built from a clone of the committed HEAD.
	local src=.
	if [ -f .git ]; then
		src=$work/src
		rm -rf "$src"
		git clone -q --shared --no-checkout . "$src"
		git -C "$src" checkout -q --detach "$revision"
		[ -z "$(git status --porcelain 2>/dev/null)" ] ||
			echo "build-images: a git worktree: factline is built from HEAD ($revision), without the uncommitted changes" >&2
	fi
	(cd "$src" && CGO_ENABLED=0 "$go" build -buildvcs=true -trimpath -o "$OLDPWD/$root/usr/local/bin/factline" ./cmd/factline)
	cp /bin/busybox "$root/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[ "$applet" = busybox ] || [ "$applet" = bash ] || ln -sf busybox "$root/bin/$applet"
	done
	# Cases' scripts and the runner's containment wrapper run bash.
	cp /bin/bash-static "$root/bin/bash"
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
		cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
	fi
	build factline "$ctx" deploy/Containerfile
}

nats_image() {
	local ctx=$work/nats root=$work/nats/rootfs
	newroot "$root"
	mkdir -p "$ctx/data"
	CGO_ENABLED=0 "$go" build -trimpath -o "$root/usr/local/bin/nats-server" github.com/nats-io/nats-server/v2
	build factline-nats "$ctx" deploy/nats/Containerfile
}

prometheus_image() {
	local ctx=$work/prometheus root=$work/prometheus/rootfs bin
	bin=$(command -v prometheus || true)
	[ -n "$bin" ] || { echo "no prometheus: apt-get install prometheus" >&2; exit 1; }
	newroot "$root"
	mkdir -p "$ctx/data" "$root/etc/prometheus"
	cp "$bin" "$root/usr/local/bin/prometheus"
	# Debian builds prometheus against the C library: bring the loader and
	# every library ldd names, at the same paths.
	for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	build factline-prometheus "$ctx" deploy/prometheus/Containerfile
}

for i in "${images[@]}"; do
	case $i in
	factline) factline_image ;;
	nats) nats_image ;;
	prometheus) prometheus_image ;;
	*) echo "unknown image $i (have: factline, nats, prometheus)" >&2; exit 2 ;;
	esac
done
