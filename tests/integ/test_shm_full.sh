#!/usr/bin/env bash
# test_shm_full.sh - the same-host path on a file system with no room for
# a ring (a container's 64 MiB /dev/shm, say): the sender sends through
# the kernel and every datagram arrives, where a store into a ring the
# file system could not fill would have killed it with SIGBUS (mmap(2)).
#
# In a mount and network namespace of the test's own, UMC_SHM_DIR is a
# tmpfs:
#   1. of 4 MiB, rings of 1 MiB: mc_procs fanout, the datagrams through
#      the rings (tx_shm and rx_shm count them all): the control, that
#      this directory serves the path at all;
#   2. of 64 KiB (the group's header fits, no ring does), rings of 1 MiB:
#      mc_procs fanout with MC_PROCS_NO_ROOM=1: every receiver QP gets
#      all 300 datagrams in order, none through a ring (tx_shm 0, rx_shm
#      0), and no process dies.
#
# Needs root (mount and network namespaces): exits 77 otherwise.
set -u

BIN=${UMC_BIN:?UMC_BIN is set by ctest}
SKIP=77
[ "$(id -u)" -eq 0 ] && unshare -m -n true 2>/dev/null || { echo "SKIP: needs root for mount and network namespaces"; exit $SKIP; }
if [ -z "${UMC_SHM_FULL_INNER:-}" ]; then
	exec unshare -m -n --propagation private env UMC_SHM_FULL_INNER=1 bash "$0" "$@"
fi
ip link set lo up
ip route add 224.0.0.0/4 dev lo src 127.0.0.1

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
# The tmpfs comes off before check_lib's removal of $work.
trap 'umount "$work/shm" 2>/dev/null; rm -rf "$work"' EXIT

mkdir "$work/shm"
export UMC_SHM_DIR=$work/shm UMC_SHM_RING=1048576

# 1. Room for the rings.
mount -t tmpfs -o size=4m,mode=0700 umc-shm-test "$work/shm" || { echo "SKIP: cannot mount a tmpfs"; exit $SKIP; }
if "$BIN/mc_procs" fanout >"$work/room.out" 2>&1; then
	ok "4 MiB: fanout through the rings"
else
	bad "4 MiB: fanout: $(grep -m3 -i 'fail\|signal' "$work/room.out")"
fi
umount "$work/shm"

# 2. No room for one.
mount -t tmpfs -o size=64k,mode=0700 umc-shm-test "$work/shm"
if MC_PROCS_NO_ROOM=1 "$BIN/mc_procs" fanout >"$work/full.out" 2>&1; then
	ok "64 KiB: fanout through the kernel, all delivered"
else
	bad "64 KiB: fanout: $(grep -m3 -i 'fail\|signal' "$work/full.out")"
fi
summary
