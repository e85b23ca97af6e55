#!/usr/bin/env bash
# test_ib.sh - the simulated InfiniBand link across hosts: umc-sm on host
# s (--listen on its address), members on a, b and c (UMC_SM names it;
# each binds umc_ib0 by the default IPoIB address 127.0.0.2).
#
#   1. umc-sm with send-only support: full members on a and b, a send-only
#      member on c that sends: a and b get every message intact, from c's
#      port GID; c's QP gets nothing.  The capture on the switch's ports:
#      every datagram enters at c's port, to the MLID's IP group and umc-sm's
#      data port (4796) with TTL 1, and leaves at a's and b's ports only;
#      a's and b's hosts report the MLID's IP group, c's never; `bridge mdb`
#      lists a's and b's ports for it.
#   2. umc-sm restarted with --no-sendonly (same address): every member
#      that was joined gets RDMA_CM_EVENT_MULTICAST_ERROR with status
#      -ENETRESET (-102); a and b leave and join again; c's send-only join
#      now fails with MULTICAST_ERROR -EINVAL (-22); c joins as a full
#      member instead and sends: a and b get every message.
set -u
# shellcheck source=fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"
fab_test_init
N=500
fab_up s:0 a:0 b:0 c:0 || exit 1
SM=$(fab_addr s):4795
G=239.77.5.$((RANDOM % 250 + 1))
IB=127.0.0.2
fab_log "umc-sm on $SM; group $G; members on a b c bound to $IB"

# sm ARGS...: umc-sm on s, ready; a lease of 1 s, so that a restart is
# seen within a third of it.
nsm=0
sm() {
	nsm=$((nsm + 1))
	fab_bg sm$nsm s "$UMC_BIN/umc-sm" --listen "$SM" --lease 1000 -v "$@"
	wait_until 10 grep -qs '^umc-sm: ready on ' "$FAB_WORK/sm$nsm.out" && return 0
	fab_fail "umc-sm did not start: $(cat "$FAB_WORK/sm$nsm.err")"
	return 1
}
# sm_stop: SIGTERM to umc-sm itself; it must end with status 0.
sm_stop() {
	kill -TERM "$(fab_child sm$nsm)"
	fab_wait sm$nsm 10
	fab_expect_eq "umc-sm $nsm's exit status after SIGTERM" $? 0
}

sm || exit 1
fab_cap_start a "igmp or udp" || exit 1
for h in a b c; do
	fab_member $h $h $IB "$G" 1 UMC_SM="$SM" || exit 1
done
CGID=$(sed -n '1s/.* gid //p' "$FAB_WORK/c.out")
fab_cmd a 20 join full && fab_cmd b 20 join full && fab_cmd c 20 join sendonly || exit 1
MLID=$(echo "$FAB_REPLY" | sed -n 's/.* mlid //p')
# The MLID's IP group: 239.255.192.0 + (MLID - 0xC000) (umc-sm --mcast-base).
IPG=239.255.$((192 + (MLID - 0xc000) / 256)).$(((MLID - 0xc000) % 256))
fab_log "MLID $MLID, IP group $IPG, c's port GID $CGID"
fab_expect_mdb "$IPG" "as0 bs0" 2
fab_cmd c 30 send 0 $N 500 0 0
fab_expect_eq "c (send-only)" "$FAB_REPLY" "sent $N"
fab_expect_got a $N "$CGID" 0
fab_expect_got b $N "$CGID" 0
fab_expect_got c 0 - 0 # the send-only sender's own QP
fab_cap_stop a
fab_expect_count "datagrams entering at c's port to $IPG" "$(fab_q cs0 in data "$IPG") && \$7 == 1" eq $N
fab_expect_count "... leaving at a's port" "$(fab_q as0 out data "$IPG")" eq $N
fab_expect_count "... leaving at b's port" "$(fab_q bs0 out data "$IPG")" eq $N
fab_expect_count "... leaving at s's or c's port" "(\$2 == \"ss0\" || \$2 == \"cs0\") && \$3 == \"out\" && \$4 == \"data\"" eq 0
fab_expect_count "reports for $IPG from a" "$(fab_q as0 in report "$IPG")" ge 1
fab_expect_count "reports for $IPG from b" "$(fab_q bs0 in report "$IPG")" ge 1
fab_expect_count "reports for $IPG from c (send-only)" "$(fab_q cs0 in report "$IPG")" eq 0

# 2. a new subnet epoch, without send-only support
sm_stop
sm --no-sendonly || exit 1
for h in a b c; do
	fab_cmd $h 10 event 5000
	fab_expect_eq "$h after the SM restart" "$FAB_REPLY" "event RDMA_CM_EVENT_MULTICAST_ERROR 0 -102"
done
for h in a b; do
	fab_cmd $h 10 leave && fab_cmd $h 20 join full || fab_fail "$h: rejoin: $FAB_REPLY"
done
fab_cmd c 10 leave
fab_cmd c 20 join sendonly
fab_expect_eq "c's send-only join without SM support" "$FAB_REPLY" "error RDMA_CM_EVENT_MULTICAST_ERROR -22"
fab_cmd c 20 join full || fab_fail "c: full join: $FAB_REPLY"
fab_cmd c 30 send $N $N 500 0 0
fab_expect_got a $((2 * N)) "$CGID" 0
fab_expect_got b $((2 * N)) "$CGID" 0
for h in a b c; do
	fab_quit $h
	st=$?
	# c's send-only join failed, by design: fab_member counts it.
	[ $h = c ] && [ $st = 1 ] && st=0
	fab_expect_eq "$h's exit status" $st 0
done
sm_stop
