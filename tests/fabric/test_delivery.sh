#!/usr/bin/env bash
# test_delivery.sh 4|6 - RoCEv2 over IPv4 or IPv6 across a snooping switch.
#
# Four hosts on one bridge: full-member receivers on a and b, a send-only
# sender on c, and d, which joins nothing.  Checked:
#   - a and b each get every message, intact (fab_member checks every byte,
#     the completion and the GRH area: source c, TTL/hop limit 64);
#   - c's process receives nothing (its QP has receives posted; its device
#     counts no datagram read) and d's host nothing at all: the capture on
#     the switch's ports shows each datagram entering at c's port and
#     leaving at a's and b's, none at c's or d's;
#   - a and b's hosts send IGMP/MLD reports for the group at their joins and
#     leaves at their leaves; c and d none;
#   - `bridge mdb` lists exactly a's and b's ports for the group while they
#     are joined, and neither after they left.
set -u
FAM=${1:?usage: test_delivery.sh 4|6}
# shellcheck source=fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"
fab_test_init
N=2000
SIZE=1000
fab_up a:0 b:0 c:0 d:0 || exit 1
if [ "$FAM" = 6 ]; then G=ff0e::77:$(printf %x $((RANDOM % 4000 + 1))); else G=239.77.1.$((RANDOM % 250 + 1)); fi
A=$(fab_addr a "$FAM") B=$(fab_addr b "$FAM") C=$(fab_addr c "$FAM")
fab_log "group $G; receivers a=$A b=$B, send-only sender c=$C, bystander d"

fab_cap_start a "igmp or ip6 or udp" || exit 1
for h in a b c; do
	fab_member "$h" "$h" "$(fab_addr $h "$FAM")" "$G" 1 UMC_STATS=1 || exit 1
done
fab_cmd a 10 join full && fab_cmd b 10 join full && fab_cmd c 10 join sendonly || exit 1
fab_expect_mdb "$G" "as0 bs0" 2
fab_mark a joined

fab_cmd c 30 send 0 $N $SIZE 0 0
fab_expect_eq "sender" "$FAB_REPLY" "sent $N"
fab_expect_got a $N "$C" 64
fab_expect_got b $N "$C" 64
fab_expect_got c 0 - 0 # the send-only sender's own QP
fab_mark a sent
for h in a b c; do
	fab_quit $h || fab_fail "$h exited $?"
done
fab_expect_eq "the sender's device read no datagram (rx_packets)" "$(fab_counter c umc_eth0 rx_packets)" 0
for h in a b; do
	fab_expect_eq "receiver $h's device read (rx_packets)" "$(fab_counter $h umc_eth0 rx_packets)" $N
done
fab_expect_mdb "$G" "" 5
fab_cap_stop a

fab_span start end
fab_expect_count "datagrams entering at c's port" "$(fab_q cs0 in data "$G")" eq $N
fab_expect_count "datagrams leaving at a's port" "$(fab_q as0 out data "$G")" eq $N
fab_expect_count "datagrams leaving at b's port" "$(fab_q bs0 out data "$G")" eq $N
fab_expect_count "datagrams leaving at c's port" "$(fab_q cs0 out data)" eq 0
fab_expect_count "datagrams leaving at d's port" "$(fab_q ds0 out data)" eq 0
fab_expect_count "datagrams with a TTL/hop limit other than 64" "\$4 == \"data\" && \$7 != 64" eq 0
fab_span start joined
fab_expect_count "reports for $G from a at its join" "$(fab_q as0 in report "$G")" ge 1
fab_expect_count "reports for $G from b at its join" "$(fab_q bs0 in report "$G")" ge 1
fab_span sent end
fab_expect_count "leaves for $G from a at its leave" "$(fab_q as0 in leave "$G")" ge 1
fab_expect_count "leaves for $G from b at its leave" "$(fab_q bs0 in leave "$G")" ge 1
fab_span
for p in cs0 ds0; do
	fab_expect_count "reports and leaves for $G from $p" "$(fab_q $p in - "$G") && (\$4 == \"report\" || \$4 == \"leave\")" eq 0
done
