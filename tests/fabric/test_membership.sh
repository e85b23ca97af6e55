#!/usr/bin/env bash
# test_membership.sh 4|6|igmpv2 - who tells the switch what, and when:
# IGMPv3 (4), MLDv2 (6), or IGMPv2 (igmpv2: the querier speaks IGMPv2, so
# the hosts answer in IGMPv2).  Hosts a and b on one bridge, and c, whose
# send-only process sends every batch.  In order, each step bounded by
# markers in one capture of the switch's ports:
#
#   1. a send-only process on a joins: a sends no report;
#   2. a full member a1 joins: a reports the group; then a second full
#      member a2 on a and one on b, b1: `bridge mdb` lists a's and b's ports;
#      (igmpv2: then 6 s, more than the 5 s membership interval: the hosts'
#      answers to the general queries keep both ports listed, no report
#      suppression hides one of them, as the switch passes no host's
#      report on to another host);
#   3. the send-only process and then a1 leave: no leave from a, a2 still
#      gets every message of the next batch, and so does b1;
#   4. a2 leaves: a sends a leave and its port leaves the mdb;
#   5. one process on a with two full-member ids: one id leaves, no leave
#      from a, the other id still gets every message; it leaves: a leave;
#   6. b1 leaves; the mdb lists no port.
# c, whose process only ever joins send-only, never reports the group.
set -u
MODE=${1:?usage: test_membership.sh 4|6|igmpv2}
# shellcheck source=fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"
fab_test_init
N=200
FAM=4 UP=()
case $MODE in
6) FAM=6 ;;
igmpv2) UP=(-2) ;;
esac
fab_up "${UP[@]}" a:0 b:0 c:0 || exit 1
if [ "$FAM" = 6 ]; then G=ff0e::78:$(printf %x $((RANDOM % 4000 + 1))); else G=239.77.2.$((RANDOM % 250 + 1)); fi
A=$(fab_addr a "$FAM") B=$(fab_addr b "$FAM") C=$(fab_addr c "$FAM")
fab_log "group $G ($MODE); a=$A b=$B c=$C"
first=0
declare -A GOT

# batch WHO...: c sends N more messages; every WHO (member[:id]) gets them.
batch() {
	local w
	fab_cmd s 30 send $first $N 200 0 0 || return
	first=$((first + N))
	for w in "$@"; do
		GOT[$w]=$((${GOT[$w]:-0} + N))
		fab_expect_got "$w" "${GOT[$w]}" "$C" 64
	done
}

fab_cap_start a "igmp or ip6 or udp port 9" || exit 1
fab_member s c "$C" "$G" && fab_cmd s 10 join sendonly || exit 1

# 1. send-only on a
fab_member so a "$A" "$G" && fab_cmd so 10 join sendonly || exit 1
fab_cap_sync a s1 || fab_fail "marker s1"
fab_expect_mdb "$G" ""

# 2. full members
fab_member a1 a "$A" "$G" && fab_cmd a1 10 join full || exit 1
fab_cap_sync a s2 || fab_fail "marker s2"
fab_member a2 a "$A" "$G" && fab_cmd a2 10 join full || exit 1
fab_member b1 b "$B" "$G" && fab_cmd b1 10 join full || exit 1
fab_expect_mdb "$G" "as0 bs0" 2
if [ "$MODE" = igmpv2 ]; then
	fab_cap_sync a q0 || fab_fail "marker q0"
	sleep 6 # longer than the membership interval: the queries must keep it
	fab_cap_sync a q1 || fab_fail "marker q1"
	fab_expect_mdb "$G" "as0 bs0"
fi
batch a1 a2 b1

# 3. the send-only process and a1 leave; a2 must not be cut off
fab_cap_sync a s3 || fab_fail "marker s3"
fab_quit so || fab_fail "so exited $?"
fab_cmd a1 10 leave
fab_quit a1 || fab_fail "a1 exited $?"
batch a2 b1
fab_expect_mdb "$G" "as0 bs0"

# 4. a2, the last full member on a, leaves
fab_cap_sync a s4 || fab_fail "marker s4"
fab_cmd a2 10 leave
fab_expect_mdb "$G" "bs0" 5
fab_quit a2 || fab_fail "a2 exited $?"

# 5. two full-member ids in one process on a
fab_cap_sync a s5 || fab_fail "marker s5"
fab_member p a "$A" "$G" 2 && fab_cmd p 10 join full 0 && fab_cmd p 10 join full 1 || exit 1
fab_expect_mdb "$G" "as0 bs0" 2
fab_cap_sync a s6 || fab_fail "marker s6"
fab_cmd p 10 leave 0
batch p:1 b1
fab_expect_mdb "$G" "as0 bs0"
fab_cap_sync a s7 || fab_fail "marker s7"
fab_cmd p 10 leave 1
fab_expect_mdb "$G" "bs0" 5
fab_quit p || fab_fail "p exited $?"

# 6. b1 leaves
fab_cmd b1 10 leave
fab_expect_mdb "$G" "" 5
fab_quit b1 || fab_fail "b1 exited $?"
fab_quit s || fab_fail "s exited $?"
fab_cap_stop a

rep=report lv=leave igmp='($4 == "report" || $4 == "leave")'
fab_span start s1
fab_expect_count "1. reports for $G from a (send-only process)" "$(fab_q as0 in - "$G") && $igmp" eq 0
fab_span s1 s3
fab_expect_count "2. reports for $G from a (full member)" "$(fab_q as0 in $rep "$G")" ge 1
fab_expect_count "2. reports for $G from b (full member)" "$(fab_q bs0 in $rep "$G")" ge 1
if [ "$MODE" = igmpv2 ]; then
	fab_span q0 q1
	fab_expect_count "2. IGMPv2 reports from a answering queries in 6 s" "$(fab_q as0 in $rep "$G") && \$7 == \"v2\"" ge 2
	fab_expect_count "2. IGMPv2 reports from b answering queries in 6 s" "$(fab_q bs0 in $rep "$G") && \$7 == \"v2\"" ge 2
	fab_span
	fab_expect_count "IGMPv3 reports (the hosts must answer in IGMPv2)" "$(fab_q - in $rep "$G") && \$7 != \"v2\"" eq 0
	# RFC 4541 2.1.1: reports go to router ports only, so no host hears
	# another's report and keeps quiet (IGMPv2's report suppression).
	fab_expect_count "IGMPv2 reports passed on to other hosts' ports" "$(fab_q - out $rep "$G")" eq 0
fi
fab_span s3 s4
fab_expect_count "3. leaves for $G from a (a2 still a member)" "$(fab_q as0 in $lv "$G")" eq 0
fab_span s4 s5
fab_expect_count "4. leaves for $G from a (its last full member left)" "$(fab_q as0 in $lv "$G")" ge 1
fab_span s5 s6
fab_expect_count "5. reports for $G from a (first of two ids)" "$(fab_q as0 in $rep "$G")" ge 1
fab_span s6 s7
fab_expect_count "5. leaves for $G from a (one of two ids left)" "$(fab_q as0 in $lv "$G")" eq 0
fab_span s7 end
fab_expect_count "5. leaves for $G from a (the second id left)" "$(fab_q as0 in $lv "$G")" ge 1
fab_expect_count "6. leaves for $G from b" "$(fab_q bs0 in $lv "$G")" ge 1
fab_span
fab_expect_count "reports or leaves for $G from c (send-only)" "$(fab_q cs0 in - "$G") && $igmp" eq 0
