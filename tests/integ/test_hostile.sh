#!/usr/bin/env bash
# test_hostile.sh - hostile datagrams (random, truncated, oversized, bad
# ICRC, wrong Q_Key, wrong P_Key, wrong opcode, above the MTU) sent at a
# receiver while legitimate traffic flows (tests/integ/hostile.c):
#
#  1. IPv4 on loopback;
#  2. IPv6 across two network namespaces joined by a veth (root; this part
#     exits 77 without it).
#
# Each time: the receiver does not crash, gets every legitimate message
# intact, and its counters (UMC_STATS=1, printed at exit) show every
# hostile datagram under the reason the sender predicted, and nothing else
# dropped.
set -u
HOSTILE=${UMC_BIN:?UMC_BIN is set by ctest}/hostile
N=${N:-700}		# legitimate messages; as many hostile datagrams (at most 8192)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/umc-hostile.XXXXXX")
# shellcheck source=../lib/wait.sh
. "$(dirname "$0")/../lib/wait.sh"
NSA= NSB= RPID=
cleanup() {
	[ -n "$RPID" ] && stop_pids 10 "$RPID"
	[ -n "$NSA" ] && ip netns del "$NSA" 2>/dev/null
	[ -n "$NSB" ] && ip netns del "$NSB" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
fails=0 passes=0

# run NAME BIND_R BIND_S GROUP [RECV_PREFIX...] -- [SEND_PREFIX...]
run() {
	local name=$1 bind_r=$2 bind_s=$3 group=$4 rpre=() spre=() rc want got c
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do rpre+=("$1"); shift; done
	shift
	spre=("$@")
	echo "# $name: $N legitimate messages, $N hostile datagrams"
	UMC_STATS=1 "${rpre[@]}" timeout 60 "$HOSTILE" recv "$bind_r" "$group" "$N" \
		>"$WORK/$name.recv" 2>"$WORK/$name.recv.err" &
	RPID=$!
	wait_grep "$WORK/$name.recv" '^joined' 10 $RPID
	if ! "${spre[@]}" timeout 60 "$HOSTILE" send "$bind_s" "$group" "$N" >"$WORK/$name.send" 2>&1; then
		echo "FAIL: $name: sender:"; cat "$WORK/$name.send"; fails=$((fails + 1))
		stop_pids 5 $RPID # what it waits for will not come
		RPID=
		return
	fi
	rc=0
	wait $RPID || rc=$?
	RPID=
	cat "$WORK/$name.send" "$WORK/$name.recv"
	if [ $rc -ne 0 ]; then
		echo "FAIL: $name: receiver exit status $rc:"; cat "$WORK/$name.recv.err"
		fails=$((fails + 1))
		return
	fi
	want=$(sed -n 's/^expect //p' "$WORK/$name.send")
	got=$(grep '^umcast: umc_' "$WORK/$name.recv.err" | grep -v ' rx_packets=0 ')
	if [ -z "$want" ] || [ "$(echo "$got" | wc -l)" -ne 1 ]; then
		echo "FAIL: $name: no expectation or no single receiving device:"
		cat "$WORK/$name.recv.err"; fails=$((fails + 1))
		return
	fi
	for c in $want; do
		case " $got " in
		*" $c "*) ;;
		*) echo "FAIL: $name: counter ${c%%=*}: want ${c#*=}, got: $got"
		   fails=$((fails + 1)); return ;;
		esac
	done
	# nothing dropped for a reason the sender did not cause
	for c in rx_other_if rx_no_group rx_no_qp rx_self_blocked rx_bad_state cq_overflow; do
		case " $got " in
		*" $c=0 "*) ;;
		*) echo "FAIL: $name: $c is not 0: $got"; fails=$((fails + 1)); return ;;
		esac
	done
	echo "ok: $name: $want"
	passes=$((passes + 1))
}

# 1. IPv4 on loopback
G4=239.$(( ($$ >> 8) % 250 + 1 )).$(( $$ % 256 )).$(( RANDOM % 250 + 1 ))
run ipv4-lo 127.0.0.1 127.0.0.1 "$G4" --

# 2. IPv6 across two namespaces
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	echo "SKIP: IPv6 part needs root and iproute2"
	echo "$passes passed, $fails failed"
	[ $fails -eq 0 ] && exit 77
	exit 1
fi
X=$(printf %x $(($$ % 4000 + 1)))
NSA=umc-host-a-$$ NSB=umc-host-b-$$
# shellcheck source=netns_lib.sh
. "$(dirname "$0")/netns_lib.sh"
veth_hosts_v6 "$NSA" "$NSB" "fd98:$X" || { echo "FAIL: cannot create namespaces"; exit 1; }
run ipv6-veth "fd98:$X::1" "fd98:$X::2" "ff0e::98:$X" ip netns exec "$NSA" -- ip netns exec "$NSB"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
