#!/usr/bin/env bash
# test_routed.sh 4|6 - the routed variant: segments 0 (a, b) and 1 (c, d)
# joined by a router that forwards unicast and no multicast.
#
#   1. RoCEv2: full-member receivers on a (segment 0) and c (segment 1), a
#      send-only sender on b (segment 0), TTL 64: a gets every message, c
#      none.  The capture: every datagram reaches the router's segment-0
#      port (a multicast router port of the bridge), none enters segment 1
#      from the router; c's reports never reach segment 0.
#   2. (4 only) The InfiniBand link with umc-sm on c: unicast crosses (a
#      and b on segment 0 register and join through the router; umc-sa on a
#      reads the SA), multicast does not: with a send-only sender on b and
#      full members on a and d (segment 1), a gets every message, d none.
#   3. (4 only) The same with umc-sm --forwarding unicast: a and d, on both
#      sides of the router, get every message intact; b sends one copy per
#      member (its tx_packets); the capture holds no datagram to an MLID's
#      IP group, and b's copies to d's address enter segment 1 from the
#      router.
set -u
FAM=${1:?usage: test_routed.sh 4|6}
# shellcheck source=fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"
fab_test_init
N=300
fab_up -r a:0 b:0 c:1 d:1 || exit 1
if [ "$FAM" = 6 ]; then G=ff0e::7b:$(printf %x $((RANDOM % 4000 + 1))); else G=239.77.6.$((RANDOM % 250 + 1)); fi
A=$(fab_addr a "$FAM") B=$(fab_addr b "$FAM") C=$(fab_addr c "$FAM")
fab_log "group $G; a=$A b=$B (segment 0), c=$C (segment 1), router rt"

fab_cap_start a "igmp or ip6 or udp" || exit 1
fab_member a a "$A" "$G" && fab_cmd a 10 join full || exit 1
fab_member c c "$C" "$G" && fab_cmd c 10 join full || exit 1
fab_member b b "$B" "$G" && fab_cmd b 10 join sendonly || exit 1
fab_expect_mdb "$G" "as0 cs1" 2
fab_cmd b 30 send 0 $N 200 0 0
fab_expect_got a $N "$B" 64
fab_expect_got c 0 - 0 # segment 1
for h in a b c; do fab_quit $h || fab_fail "$h exited $?"; done
fab_cap_stop a
fab_expect_count "datagrams leaving at the router's segment-0 port" "$(fab_q rts0 out data "$G")" eq $N
fab_expect_count "datagrams entering segment 1 from the router" "$(fab_q rts1 in data)" eq 0
fab_expect_count "datagrams leaving at c's port" "$(fab_q cs1 out data)" eq 0
fab_expect_count "c's reports for $G on segment 1" "$(fab_q cs1 in report "$G")" ge 1
fab_expect_count "reports for $G entering segment 0 from the router" "$(fab_q rts0 in report "$G")" eq 0
[ "$FAM" = 4 ] || exit 0

# 2. the InfiniBand link across the router
SM=$(fab_addr c):4795
IB=127.0.0.2
fab_bg sm c "$UMC_BIN/umc-sm" --listen "$SM"
wait_until 10 grep -qs '^umc-sm: ready on ' "$FAB_WORK/sm.out" || fab_fail "umc-sm did not start"
fab_bg sa a UMC_SM="$SM" "$UMC_BIN/umc-sa" -c
fab_wait sa 10
fab_expect_eq "umc-sa -c on a, to umc-sm on c through the router" "$(grep -c 'send_only_full_member yes' "$FAB_WORK/sa.out")" 1
for h in a b d; do fab_member i$h $h $IB "$G" 1 UMC_SM="$SM" || exit 1; done
fab_cmd ia 20 join full && fab_cmd id 20 join full && fab_cmd ib 20 join sendonly || exit 1
MLID=$(echo "$FAB_REPLY" | sed -n 's/.* mlid //p')
IPG=239.255.$((192 + (MLID - 0xc000) / 256)).$(((MLID - 0xc000) % 256))
# A snooping bridge with a querier sends an IPv4 group that no port has
# reported only to its multicast router ports (net/bridge/br_multicast.c,
# br_multicast_ipv4_rcv: mrouters_only): a burst sent before the hosts'
# reports are in reaches the router alone, and a got some or none of it.
fab_expect_mdb "$IPG" "as0 ds1" 2
fab_cmd ib 30 send 0 $N 200 0 0
fab_expect_got ia $N "$(sed -n '1s/.* gid //p' "$FAB_WORK/ib.out")" 0
fab_expect_got id 0 - 0 # segment 1
for h in ia ib id; do fab_quit $h || fab_fail "$h exited $?"; done
kill -TERM "$(fab_child sm)"
fab_wait sm 10 || fab_fail "umc-sm did not end"

# 3. umc-sm --forwarding unicast: the InfiniBand link without IP multicast
fab_bg smu c "$UMC_BIN/umc-sm" --listen "$SM" --forwarding unicast -v
wait_until 10 grep -qs '^umc-sm: ready on ' "$FAB_WORK/smu.out" || fab_fail "umc-sm did not start"
fab_cap_start a "udp" || exit 1
for h in a b d; do fab_member u$h $h $IB "$G" 1 UMC_SM="$SM" UMC_STATS=1 || exit 1; done
fab_cmd ua 20 join full && fab_cmd ud 20 join full && fab_cmd ub 20 join sendonly || exit 1
fab_cmd ub 30 send 0 $N 200 0 0
BGID=$(sed -n '1s/.* gid //p' "$FAB_WORK/ub.out")
fab_expect_got ua $N "$BGID" 0
fab_expect_got ud $N "$BGID" 0 # across the router
for h in ua ub ud; do fab_quit $h || fab_fail "$h exited $?"; done
fab_cap_stop a
fab_expect_eq "b's datagrams: one copy per member" "$(fab_counter ub umc_ib0 tx_packets)" $((2 * N))
fab_expect_count "datagrams to an MLID's IP group" "\$4 == \"data\" && \$6 ~ /^239\\.255\\./" eq 0
for i in "${!FAB_IFX[@]}"; do [ "${FAB_IFX[$i]}" = rts1 ] && RTS1=$i; done
fab_expect_eq "b's copies to d entering segment 1 from the router" "$(tshark -n -r "$FAB_WORK/cap.pcapng" \
	-Y "sll.ifindex == $RTS1 && sll.pkttype != 4 && ip.src == $B && ip.dst == $(fab_addr d) && udp" |
	wc -l)" $N
kill -TERM "$(fab_child smu)"
fab_wait smu 10 || fab_fail "umc-sm did not end"
