#!/usr/bin/env bash
# test_netns_ipv6.sh - IPv6 groups, an extension (Linux's rdma_cm refuses
# them on RoCEv2 with 524).  Two hosts in network namespaces joined by a
# veth pair (fd99:X::/64 inside them only): a full-member receiver in A and
# a send-only sender in B on group ff0e::99:X must deliver every message.
# And on loopback, where Linux routes no IPv6 multicast, the join fails at
# once with ENODEV instead of every send vanishing.
# Needs root (namespaces): exits 77 otherwise.
set -u
MCKEY=${UMC_BIN:?UMC_BIN is set by ctest}/umc-mckey
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: iproute2 not installed"; exit 77; }
NSA=umc-v6-a-$$ NSB=umc-v6-b-$$ X=$(printf %x $(($$ % 4000 + 1))) N=50
GROUP=ff0e::99:$X
WORK=$(mktemp -d)
# shellcheck source=../lib/wait.sh
. "$(dirname "$0")/../lib/wait.sh"
trap 'stop_pids 5 $RPID; ip netns del $NSA 2>/dev/null; ip netns del $NSB 2>/dev/null; rm -rf "$WORK"' EXIT
RPID=
# shellcheck source=netns_lib.sh
. "$(dirname "$0")/netns_lib.sh"
veth_hosts_v6 "$NSA" "$NSB" "fd99:$X" || { echo "SKIP: cannot create namespaces"; exit 77; }

fails=0
# Loopback: no IPv6 multicast route, so no join.
out=$(ip netns exec "$NSA" timeout 10 "$MCKEY" -m "$GROUP" -b ::1 -C 1 -t 2000 2>&1)
case $out in
*"failure joining: No such device"*) echo "ok: IPv6 join on loopback gives ENODEV" ;;
*) echo "FAIL: IPv6 join on loopback: $out"; fails=$((fails + 1)) ;;
esac

# veth: a full member in A, a send-only sender in B.
ip netns exec "$NSA" timeout 30 "$MCKEY" -m "$GROUP" -b "fd99:$X::1" -C $N -t 10000 \
	>"$WORK/recv.out" 2>&1 &
RPID=$!
wait_grep "$WORK/recv.out" '^mckey: joined dgid:' 10 $RPID
grep -q "^mckey: joined dgid: $GROUP " "$WORK/recv.out" || {
	echo "FAIL: receiver did not join:"; cat "$WORK/recv.out"; exit 1; }
ip netns exec "$NSB" timeout 30 "$MCKEY" -m "$GROUP" -b "fd99:$X::2" -s -o -w 0 -C $N \
	>"$WORK/send.out" 2>&1 || { echo "FAIL: sender:"; cat "$WORK/send.out"; fails=$((fails + 1)); }
wait_pid 15 $RPID
rc=$?
RPID=
if [ $rc -eq 0 ] && grep -qx "mckey: received $N messages" "$WORK/recv.out"; then
	echo "ok: $N IPv6 multicast messages across the veth"
else
	echo "FAIL: receiver (exit $rc):"; cat "$WORK/recv.out"; fails=$((fails + 1))
fi
echo "$((2 - fails)) passed, $fails failed"
[ $fails -eq 0 ]
