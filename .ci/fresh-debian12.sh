#!/usr/bin/env bash
# fresh-debian12.sh REPO CMD... - run CMD as root in a pristine Debian 12
# (bookworm) minbase system holding a clean clone of the git repository REPO
# at /src, the way a new user's machine would see the project.
#
# The pristine system is made once with debootstrap and cached in
# $UMC_FRESH_ROOT (default /var/tmp/umcast-debian12-minbase); every run gets
# its own copy of it, so nothing that one run installs is seen by the next.
# debootstrap takes the mirror from this host's apt sources
# (scripts/apt-mirror.sh), or UMC_FRESH_MIRROR, else its own default.  The
# copy uses this host's apt sources and configuration (the same package
# mirror), and a clean clone of REPO's checked-out commit: files that are not
# committed do not exist there.
#
# Network namespaces work inside: / is a mount point (ip netns bind-mounts
# under /run/netns, which needs a mount point above it) and /run is a fresh
# tmpfs.  /proc, /sys and /dev are the host's.
#
# UMC_FRESH_OUT=DIR: the host directory DIR is /out inside (read and
# written), so that a run can leave files for the next (.ci/deb-build.sh's
# packages).
#
# Exit status: CMD's, or 2 when the system cannot be made.
set -u
if [ $# -lt 2 ]; then
	echo "usage: $0 REPO CMD..." >&2
	exit 2
fi
repo=$1
shift
base=${UMC_FRESH_ROOT:-/var/tmp/umcast-debian12-minbase}
mirror=${UMC_FRESH_MIRROR:-$("$(dirname "$0")/../scripts/apt-mirror.sh" bookworm)}

if [ "$(id -u)" -ne 0 ]; then
	echo "$0: needs root (debootstrap, chroot, mounts)" >&2
	exit 2
fi

# --- the cached pristine root -----------------------------------------------
# Made under a lock into a temporary directory and renamed into place, so
# that concurrent runs never see half a system.
make_base() {
	local tmp
	command -v debootstrap >/dev/null ||
		apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
		return 1
	tmp=$(mktemp -d "$base.new.XXXXXX") || return 1
	echo "fresh-debian12: debootstrap --variant=minbase bookworm into $base${mirror:+ from $mirror}"
	# shellcheck disable=SC2086 # no mirror: debootstrap's default
	if ! debootstrap --variant=minbase bookworm "$tmp" $mirror >"$tmp.log" 2>&1; then
		tail -n 20 "$tmp.log"
		rm -rf "$tmp" "$tmp.log"
		return 1
	fi
	rm -f "$tmp.log"
	chmod 755 "$tmp"	# mktemp made it private; it becomes /
	mv "$tmp" "$base"
}
mkdir -p "$(dirname "$base")"
exec 9>"$base.lock"
flock 9
if [ ! -x "$base/bin/bash" ] && ! make_base; then
	echo "fresh-debian12: could not make the Debian 12 root" >&2
	exit 2
fi
flock -u 9

# --- this run's copy ------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/umcast-fresh.XXXXXX")
chmod 755 "$run"	# apt downloads as _apt, which must reach the root
root=$run/root
cleanup() {
	local m
	for m in out run dev sys proc; do
		umount -R -l "$root/$m" 2>/dev/null
	done
	umount -l "$root" 2>/dev/null
	# Never through a mount that is still there (/out is the host's).
	if grep -q " $run/" /proc/self/mounts; then
		echo "fresh-debian12: $run still has mounts: left in place" >&2
	else
		rm -rf --one-file-system "$run"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cp -a "$base" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
rm -f "$root/etc/apt/sources.list" "$root"/etc/apt/sources.list.d/*
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/"
cp -a /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/" 2>/dev/null
cp -a /etc/apt/apt.conf.d/. "$root/etc/apt/apt.conf.d/" 2>/dev/null
# Keyrings the host's sources are signed with, where they live outside /usr.
cp -a /etc/apt/trusted.gpg.d/. "$root/etc/apt/trusted.gpg.d/" 2>/dev/null
for k in /usr/share/keyrings/*.gpg; do
	[ -e "$root$k" ] || cp "$k" "$root$k"
done

# file:// and --depth 1: works from a shallow clone too, and copies one commit.
if ! git clone -q --depth 1 "file://$(cd "$repo" && pwd)" "$root/src"; then
	echo "fresh-debian12: git clone $repo failed" >&2
	exit 2
fi

mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"
mount -t tmpfs tmpfs "$root/run"
if [ -n "${UMC_FRESH_OUT:-}" ]; then
	mkdir -p "$UMC_FRESH_OUT" "$root/out"
	mount --bind "$UMC_FRESH_OUT" "$root/out"
fi

# A clean environment, as a login on the new machine would have; a proxy
# this machine reaches the mirror through is kept.
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb LANG=C.UTF-8 ${CI:+CI=$CI} \
	${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
	${no_proxy:+no_proxy=$no_proxy} \
	/bin/bash -c 'cd /src && "$@"' fresh "$@"
