#!/usr/bin/env bash
# test_netns_igmp.sh - two "hosts" (network namespaces A and B joined by a
# veth pair, 10.99.x.0/24 inside the namespaces only): umc-mckey receiver
# in A joins as a full member, umc-mckey sender in B as a send-only full
# member.  A capture on B's end of the link must show:
#   - IGMP membership reports for the group from A (the full member's
#     join, a CHANGE_TO_EXCLUDE record, and its leave, CHANGE_TO_INCLUDE);
#   - no IGMP at all from B (a send-only join makes no IP membership);
#   - the sender's N RoCEv2 datagrams crossing the link;
# and the receiver must get all N messages (exit 0).
#
# References: the kernel's cma_iboe_join_multicast() (full member -> IGMP,
# send-only -> none); docs/design.md, "Observed on rxe" 6 (IGMPv3 reports, only
# A sends with mckey -o); docs/design.md, "Groups and membership".
#
# Needs root (network namespaces, capture) and tshark: exits 77 otherwise.
# Nothing outside the two namespaces is touched; they are deleted on exit.
set -u

BIN=${UMC_BIN:?UMC_BIN is set by ctest}
MCKEY=$BIN/umc-mckey
SKIP=77
N=10

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit $SKIP; }
command -v tshark >/dev/null 2>&1 || { echo "SKIP: tshark not installed"; exit $SKIP; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: iproute2 not installed"; exit $SKIP; }
[ -x "$MCKEY" ] || { echo "FAIL: $MCKEY not built"; exit 1; }

NSA=umc-igmp-a-$$
NSB=umc-igmp-b-$$
X=$(($$ % 250 + 1))
ADDR_A=10.99.$X.1
ADDR_B=10.99.$X.2
GROUP=239.99.$X.$((RANDOM % 250 + 1))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/umc-netns.XXXXXX")
# shellcheck source=../lib/wait.sh
. "$(dirname "$0")/../lib/wait.sh"
PIDS=()
FAILS=0

cleanup() {
	stop_pids 5 "${PIDS[@]}"
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	if [ "$FAILS" -eq 0 ] && [ -z "${KEEP_WORK:-}" ]; then
		rm -rf "$WORK"
	else
		echo "# outputs kept in $WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

# --- the two hosts ---------------------------------------------------------
# Namespaces of an earlier run that was killed (SIGKILL skips the trap).
for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
	case $ns in
	umc-igmp-[ab]-*)
		pid=${ns##*-}
		kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null
		;;
	esac
done
if ! ip netns add "$NSA" 2>"$WORK/netns.err"; then
	echo "SKIP: cannot create network namespaces: $(cat "$WORK/netns.err")"
	exit $SKIP
fi
ip netns add "$NSB" || { fail "ip netns add $NSB"; exit 1; }
# The veth pair is created inside A with its peer moved straight into B.
ip -n "$NSA" link add veth-a type veth peer name veth-b netns "$NSB" ||
	{ fail "cannot create the veth pair"; exit 1; }
ip -n "$NSA" addr add "$ADDR_A/24" dev veth-a
ip -n "$NSB" addr add "$ADDR_B/24" dev veth-b
for ns in "$NSA" "$NSB"; do
	ip -n "$ns" link set lo up
done
ip -n "$NSA" link set veth-a up
ip -n "$NSB" link set veth-b up
echo "# A=$ADDR_A B=$ADDR_B group=$GROUP"

# --- capture on B's end of the link ------------------------------------------
PCAP=$WORK/link.pcap
mkfifo "$WORK/live"
ip netns exec "$NSB" timeout -k 2 90 tshark -n -l -i veth-b -P -F pcap -w "$PCAP" -a duration:80 \
	-f "igmp or (udp and dst port 4791) or (udp and dst port 9)" \
	>"$WORK/live" 2>"$WORK/tshark.err" &
PIDS+=("$!")
TPID=$!
exec 3<"$WORK/live"
# Live when a probe datagram from A (to the discard port of B) shows up.
live=0
for _ in $(seq 100); do
	ip netns exec "$NSA" bash -c "printf probe >/dev/udp/$ADDR_B/9" 2>/dev/null
	if IFS= read -r -t 0.2 -u 3 line; then
		case $line in *"$ADDR_A"*) live=1; break ;; esac
	fi
	kill -0 "$TPID" 2>/dev/null || break
done
[ $live -eq 1 ] || { fail "capture in $NSB did not start"; cat "$WORK/tshark.err"; exit 1; }

# Lines tshark printed so far are kept in live.txt.  wait_live REGEX N SECS:
# read the live capture (fd 3) until N lines in all match REGEX.
: >"$WORK/live.txt"
wait_live() {
	local end=$((SECONDS + $3)) line
	while [ "$(grep -cE -- "$1" "$WORK/live.txt")" -lt "$2" ]; do
		[ "$SECONDS" -le "$end" ] || return 1
		IFS= read -r -t 1 -u 3 line && echo "$line" >>"$WORK/live.txt"
	done
	return 0
}

# --- receiver in A (full member) -------------------------------------------
: >"$WORK/recv.out"
ip netns exec "$NSA" timeout -k 2 30 "$MCKEY" -m "$GROUP" -b "$ADDR_A" -C $N -t 10000 \
	>"$WORK/recv.out" 2>"$WORK/recv.err" &
RPID=$!
PIDS+=("$RPID")
# Ready when it has joined, and its IGMP report has been seen on the link.
end=$((SECONDS + 10))
until grep -q '^mckey: joined dgid:' "$WORK/recv.out"; do
	if [ $SECONDS -gt $end ] || ! kill -0 $RPID 2>/dev/null; then
		fail "receiver in A did not join"
		cat "$WORK/recv.out" "$WORK/recv.err"
		exit 1
	fi
	IFS= read -r -t 0.05 -u 3 line && echo "$line" >>"$WORK/live.txt"
done
wait_live "$ADDR_A .*IGMP.*Join group $GROUP" 1 10 ||
	fail "no IGMP report from A after its full-member join"

# --- send-only sender in B -------------------------------------------------
ip netns exec "$NSB" timeout -k 2 30 "$MCKEY" -m "$GROUP" -b "$ADDR_B" -s -o -C $N -w 0 -t 10000 \
	>"$WORK/send.out" 2>"$WORK/send.err"
src=$?
cat "$WORK/send.out"
[ $src -eq 0 ] || { fail "sender exited $src"; cat "$WORK/send.err"; }
grep -qx "mckey: sent $N messages" "$WORK/send.out" || fail "sender did not send $N messages"

wait_pid 15 $RPID
rrc=$?
cat "$WORK/recv.out"
[ $rrc -eq 0 ] || { fail "receiver exited $rrc"; cat "$WORK/recv.err"; }
grep -qx "mckey: received $N messages" "$WORK/recv.out" || fail "receiver did not get $N messages"

# Everything has crossed the link once tshark has shown the N datagrams and
# the receiver's leave report (CHANGE_TO_INCLUDE, "Leave group").
wait_live "$ADDR_B .*$GROUP .*RRoCE" $N 10 || fail "tshark did not show $N datagrams from B"
wait_live "$ADDR_A .*IGMP.*Leave group $GROUP" 1 10 || fail "no IGMP report from A after its leave"
kill -INT "$TPID" 2>/dev/null
wait_until 10 gone "$TPID" || fail "tshark did not stop"
exec 3<&-

# --- what was on the link ----------------------------------------------------
TS=(tshark -n -r "$PCAP" --disable-heuristic mellanox_eoib)
count() { "${TS[@]}" -Y "$1" 2>/dev/null | wc -l; }

from_a=$(count "igmp && ip.src == $ADDR_A")
join_a=$(count "igmp && ip.src == $ADDR_A && igmp.maddr == $GROUP && igmp.record_type == 4")
leave_a=$(count "igmp && ip.src == $ADDR_A && igmp.maddr == $GROUP && igmp.record_type == 3")
from_b=$(count "igmp && ip.src == $ADDR_B")
data=$(count "ip.src == $ADDR_B && ip.dst == $GROUP && infiniband.bth.opcode == 101 && infiniband.deth.q_key == 0x01234567")
bad=$(count "ip.dst == $GROUP && (_ws.malformed || _ws.expert)")
echo "# IGMP from A: $from_a ($join_a join records, $leave_a leave records); IGMP from B: $from_b; RoCE datagrams B->group: $data"
[ "$join_a" -ge 1 ] || fail "no IGMP CHANGE_TO_EXCLUDE record for $GROUP from A (full member)"
[ "$leave_a" -ge 1 ] || fail "no IGMP CHANGE_TO_INCLUDE record for $GROUP from A (leave)"
[ "$from_b" -eq 0 ] || {
	fail "B (send-only) sent $from_b IGMP packet(s)"
	"${TS[@]}" -Y "igmp && ip.src == $ADDR_B" -V 2>/dev/null | grep -E 'Record Type|Multicast Address'
}
[ "$data" -eq $N ] || fail "$data RoCE datagrams from B to the group on the link, expected $N"
[ "$bad" -eq 0 ] || fail "$bad malformed datagrams"

if [ "$FAILS" -eq 0 ]; then
	echo "PASS: IGMP only from the full member; $N messages received across namespaces"
	exit 0
fi
echo "FAIL: $FAILS check(s) failed"
exit 1
