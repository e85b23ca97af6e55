#!/usr/bin/env bash
# test_fanout.sh [4|6] - 16 receiver processes over 4 hosts (4 each), one
# send-only sender on a fifth sending 100 000 messages at 50 000 a second:
# each receiver's loss is counted (fab_member counts every message number
# once and checks its bytes) and reported, and every message a receiver
# lacks is accounted for by a counter that says where it went:
#   - the receiver's library counters (UMC_STATS=1): rx_no_recv,
#     rx_too_long, cq_overflow, ... every drop reason of the library;
#   - its sockets' receive-buffer overflows (the drops column of
#     /proc/net/udp, per socket: the library does not count these itself);
#   - datagrams the switch could not hand to its host (the switch port's TX
#     dropped: each is one loss for each of the host's receivers), and
#     datagrams the sender's host could not hand to the switch (its
#     interface's TX dropped: one loss for every receiver).
# For each receiver: lost = library drops + socket drops + port drops +
# the sender's interface drops.
# The sender's library handed all 100 000 to the kernel (tx_packets).
set -u
FAM=${1:-4}
# shellcheck source=fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"
fab_test_init
N=${FANOUT_N:-100000}
RATE=${FANOUT_RATE:-50000}
SIZE=64
HOSTS=(a b c d)
DROPS="rx_no_recv rx_too_long rx_malformed rx_bad_icrc rx_qkey_viol rx_pkey_viol rx_no_group
	rx_other_if rx_prot_err rx_bad_state cq_overflow"
fab_up a:0 b:0 c:0 d:0 e:0 || exit 1
if [ "$FAM" = 6 ]; then G=ff0e::7a:$(printf %x $((RANDOM % 4000 + 1))); else G=239.77.4.$((RANDOM % 250 + 1)); fi
fab_log "group $G; 16 receivers on a b c d, sender on e; $N messages of $SIZE bytes at $RATE/s"

# txdrop ROLE IF: the TX dropped counter of interface IF in namespace ROLE.
txdrop() { fab_x "$1" cat "/sys/class/net/$2/statistics/tx_dropped"; }
declare -A DROP0 SOCK REP
RS=()
for h in "${HOSTS[@]}"; do
	DROP0[$h]=$(txdrop sw "${h}s0")
	for i in 1 2 3 4; do
		fab_member "$h$i" "$h" "$(fab_addr "$h" "$FAM")" "$G" 1 UMC_STATS=1 && fab_cmd "$h$i" 10 join full || exit 1
		RS+=("$h$i")
	done
done
fab_expect_mdb "$G" "as0 bs0 cs0 ds0" 2
fab_member s e "$(fab_addr e "$FAM")" "$G" 1 UMC_STATS=1 && fab_cmd s 10 join sendonly || exit 1
DROP0[e]=$(txdrop e eth0)
t0=${EPOCHREALTIME/./}
fab_cmd s 60 send 0 "$N" $SIZE 0 "$RATE"
t1=${EPOCHREALTIME/./}
fab_expect_eq "sender" "$FAB_REPLY" "sent $N"
fab_log "sent in $(((t1 - t0) / 1000)) ms"
fab_quit s || fab_fail "sender exited $?"
sent_drop=$(($(txdrop e eth0) - DROP0[e]))
fab_expect_eq "the sender's datagrams handed to the kernel (tx_packets)" "$(fab_counter s umc_eth0 tx_packets)" "$N"

# Every receiver takes what is queued for it, all at once; each ends after
# 2 s without a new message.
for r in "${RS[@]}"; do fab_send "$r" expect "$N" 2000; done
for r in "${RS[@]}"; do
	fab_reply $r 60 || fab_fail "$r: $FAB_REPLY"
	REP[$r]=$FAB_REPLY
	SOCK[$r]=$(fab_sock_drops $r "${r%?}")
done
total=0 sock=0
for r in "${RS[@]}"; do
	rep=${REP[$r]}
	got=$(echo "$rep" | awk '$1 == "got" {print $2}')
	echo "$rep" | grep -q " dup 0 bad 0 " || fab_fail "$r: $rep"
	fab_quit "$r" || fab_fail "$r exited $?"
	lib=0
	for k in $DROPS; do lib=$((lib + $(fab_counter $r umc_eth0 $k))); done
	port=$(($(txdrop sw "${r%?}s0") - DROP0[${r%?}]))
	echo "# $r: received $got of $N, lost $((N - got)): library counters $lib," \
		"socket buffer $((SOCK[$r])), switch port $port, sender's interface $sent_drop"
	fab_expect_eq "$r: losses accounted for by counters" $((lib + SOCK[$r] + port + sent_drop)) $((N - got))
	total=$((total + N - got)) sock=$((sock + SOCK[$r]))
done
echo "# all receivers: lost $total of $((16 * N)); $sock in sockets' receive buffers, which UMC_STATS does not show"
