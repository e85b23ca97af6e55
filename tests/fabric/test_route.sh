#!/usr/bin/env bash
# test_route.sh 4|6 - the interface and the hop limit of a multicast
# datagram follow the bound address and the AH, not the routing table.
#
# Two bridges (segments 0 and 1, no router): a on 0, b on 1, and m on both
# (eth0 on segment 0, eth1 on segment 1), whose routing table sends the
# group out of eth0 (checked with `ip route get`).  Full-member receivers
# on a and b; then on m:
#   - a sender bound to m's segment-1 address, AH hop limit 5: every
#     datagram enters the switch at m's segment-1 port with TTL/hop limit
#     5 and that source, none at its segment-0 port; b gets them all (its
#     GRH area says TTL 5, source m@1), a none;
#   - a sender bound to m's segment-0 address, AH hop limit 1: the mirror
#     image (a gets them, TTL 1);
#   - the join event's own AH: TTL/hop limit 64;
#   - a full member bound to m's segment-1 address: m reports the group on
#     eth1 only, and `bridge mdb` lists m's segment-1 port, not its other.
set -u
FAM=${1:?usage: test_route.sh 4|6}
# shellcheck source=fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"
fab_test_init
N=300
fab_up a:0 b:1 m:0,1 || exit 1
if [ "$FAM" = 6 ]; then G=ff0e::79:$(printf %x $((RANDOM % 4000 + 1))); else G=239.77.3.$((RANDOM % 250 + 1)); fi
A=$(fab_addr a "$FAM") B=$(fab_addr b "$FAM" 1) M0=$(fab_addr m "$FAM" 0) M1=$(fab_addr m "$FAM" 1)
fab_log "group $G; a=$A (segment 0), b=$B (segment 1), m=$M0 and $M1"
# m's routes send the group out of eth0, whatever is bound.
if [ "$FAM" = 6 ]; then
	fab_x m ip -6 route add multicast "$G/128" dev eth0 table local
else
	fab_x m ip route add "$G/32" dev eth0
fi
fab_expect_eq "m's route to $G" "$(fab_x m ip -"$FAM" route get "$G" | grep -o 'dev [a-z0-9]*')" "dev eth0"

fab_cap_start a "igmp or ip6 or udp" || exit 1
fab_member ra a "$A" "$G" && fab_cmd ra 10 join full || exit 1
fab_member rb b "$B" "$G" && fab_cmd rb 10 join full || exit 1
fab_expect_mdb "$G" "as0 bs1" 2

# send NAME BIND HOP: a send-only sender on m bound to BIND sends N
# messages numbered from $first with the join event's AH, its hop limit
# set to HOP (0: left as the event gave it).
first=0
send() {
	fab_member "$1" m "$2" "$G" && fab_cmd "$1" 10 join sendonly &&
		fab_cmd "$1" 30 send $first $N 100 "$3" 0 && fab_quit "$1" ||
		fab_fail "sender $1 on $2"
	first=$((first + N))
}
fab_cap_sync a s1
send m1 "$M1" 5
fab_expect_got rb $N "$M1" 5
fab_expect_got ra 0 - 0
fab_cap_sync a s2
send m0 "$M0" 1
fab_expect_got ra $N "$M0" 1
fab_expect_got rb $N "$M1" 5 only
fab_cap_sync a s3
send m2 "$M1" 0
fab_expect_got rb $((2 * N)) "$M1" 64 # the join event's hop limit

fab_cap_sync a s4
fab_member rm m "$M1" "$G" && fab_cmd rm 10 join full || exit 1
fab_expect_mdb "$G" "as0 bs1 ms1" 2
fab_cap_sync a s5
for r in ra rb rm; do fab_quit $r || fab_fail "$r exited $?"; done
fab_cap_stop a

fab_span s1 s2
fab_expect_count "datagrams from m@1 entering at m's segment-1 port, TTL 5" "$(fab_q ms1 in data "$G") && \$5 == \"$M1\" && \$7 == 5" eq $N
fab_expect_count "datagrams entering at m's segment-0 port" "$(fab_q ms0 in data)" eq 0
fab_span s2 s3
fab_expect_count "datagrams from m@0 entering at m's segment-0 port, TTL 1" "$(fab_q ms0 in data "$G") && \$5 == \"$M0\" && \$7 == 1" eq $N
fab_expect_count "datagrams entering at m's segment-1 port" "$(fab_q ms1 in data)" eq 0
fab_span s3 s4
fab_expect_count "datagrams from m@1 entering at m's segment-1 port, TTL 64" "$(fab_q ms1 in data "$G") && \$5 == \"$M1\" && \$7 == 64" eq $N
fab_span s4 s5
fab_expect_count "reports for $G from m on segment 1" "$(fab_q ms1 in report "$G")" ge 1
fab_span
fab_expect_count "reports for $G from m on segment 0" "$(fab_q ms0 in report "$G")" eq 0
