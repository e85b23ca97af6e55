#!/usr/bin/env bash
# test_ib_mckey.sh - the README's "Simulated InfiniBand" commands work as
# written there.  The umc-mckey, umc-sa and umc-sm command lines below are
# the README's, character for character (each is first looked up in the
# README's section, so a change there fails here until both agree); they
# run with two changes a test needs:
#
#  - umc-sm listens on a port the kernel chooses (--listen 127.0.0.1:0),
#    and UMC_SM names it, so that concurrent tests cannot share the SM;
#  - the README's "sleep 1" pauses are replaced by waits for the lines
#    that say what the pause was for (umc-sm's ready line, each receiver's
#    JOIN line), every wait bounded, and every process stopped by its PID.
#
# Checked:
#  1. two receivers and the send-only sender join 239.1.2.3 over umc_ib0:
#     each JOIN line has the MGID ff12:4001:ffff::f01:203 and an MLID of
#     0xc001 or above, the same for all three; while they run (the sender
#     waits 3 s after its join before it sends), umc-sa -g lists the group
#     with that MLID and Q_Key 0x01234567 beside the IPoIB broadcast group,
#     and umc-sa -m its three members: JoinState 0x1 twice, 0x8 once;
#  2. the sender sends its 10 messages and each receiver receives all 10,
#     with umc-mckey's whole output as the README shows it;
#  3. against umc-sm --no-sendonly the same sender fails as the README
#     shows: MULTICAST_ERROR with error -22, return status -22, exit
#     status 234; umc-sa -c says send_only_full_member no;
#  4. umc-sm ends cleanly (exit status 0) on SIGTERM each time.
#
# Env: UMC_BIN (build/bin), UMC_SOURCE_DIR (the README's directory).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"

BIN=${UMC_BIN:-$here/../../build/bin}
README=${UMC_SOURCE_DIR:-$here/../..}/README.md
T=60	# seconds: bound on every process

# The README's lines (build/bin/ is $BIN here).
L_SM='build/bin/umc-sm & sm=$!; sleep 1'
L_ENV='export UMC_SM=127.0.0.1:4795'
L_RECV1='build/bin/umc-mckey -m 239.1.2.3 -b 127.0.0.2 & r1=$!'
L_RECV2='build/bin/umc-mckey -m 239.1.2.3 -b 127.0.0.2 & r2=$!'
L_SEND='build/bin/umc-mckey -m 239.1.2.3 -b 127.0.0.2 -s -o & s=$!'
L_SA='sleep 1; build/bin/umc-sa -g'
L_SAM='build/bin/umc-sa -m --sm-key 1'
L_WAIT='wait $r1 $r2 $s'
L_STOP='kill $sm; wait'
L_NOSO='build/bin/umc-sm --no-sendonly & sm=$!; sleep 1'
L_SEND2='build/bin/umc-mckey -m 239.1.2.3 -b 127.0.0.2 -s -o; echo "exit status $?"'
RECV=(-m 239.1.2.3 -b 127.0.0.2)
SEND=(-m 239.1.2.3 -b 127.0.0.2 -s -o)
MGID=ff12:4001:ffff::f01:203

echo "# 0. the commands are the README's"
section=$(sed -n '/^## Simulated InfiniBand/,/^## /p' "$README")
[ -n "$section" ] || { fail "no section 'Simulated InfiniBand' in $README"; summary; }
for l in "$L_SM" "$L_ENV" "$L_RECV1" "$L_RECV2" "$L_SEND" "$L_SA" "$L_SAM" "$L_WAIT" "$L_STOP" \
	"$L_NOSO" "$L_SEND2"; do
	# a command line, optionally followed by blanks and a comment
	if grep -Eq "^$(printf '%s' "$l" | sed 's/[][\.*^$|+?(){}]/\\&/g')( +#.*)?\$" <<<"$section"; then
		pass "README: $l"
	else
		fail "the README's section lacks the line: $l"
	fi
done
for l in "mckey: joined dgid: $MGID mlid 0xc001 sl 0" "mckey: sent 10 messages" \
	"mckey: received 10 messages" "mckey: event: RDMA_CM_EVENT_MULTICAST_ERROR, error: -22" \
	"mgid $MGID mlid 0xc001 port_gid fe80::200:0:0:[0-9a-f]* join_state 0x8 proxy_join 0" \
	"exit status 234"; do
	grep -q "^$l" <<<"$section" || fail "the README does not show the output line: $l"
done
[ "$FAILS" -eq 0 ] || summary

# start_sm NAME ARGS... : umc-sm on a free port; sets UMC_SM from its ready line.
start_sm() {
	local name=$1
	shift
	start "$name" $T "$BIN/umc-sm" "$@" --listen 127.0.0.1:0
	wait_line "$name" '^umc-sm: ready on 127\.0\.0\.1:[0-9]+ epoch 0x[0-9a-f]+$' 10 || summary
	UMC_SM=$(sed -n 's/^umc-sm: ready on \(127\.0\.0\.1:[0-9]*\) .*/\1/p' "$WORK/$name.out")
	export UMC_SM
}

# stop_sm NAME : SIGTERM to umc-sm itself, the child of NAME's timeout(1);
# it must exit 0.  (Signalling timeout(1) instead would arm its -k: a
# sanitized umc-sm on a loaded machine may take longer than that to exit.)
stop_sm() {
	local pidvar="PID_$1"
	pkill -TERM -P "${!pidvar}" -x umc-sm || fail "$1: no umc-sm under PID ${!pidvar}"
	finish "$1"
	expect_rc "$1" 0
}

unset UMC_IB_ADDR UMC_QPN_BASE	# the defaults the README relies on

echo "# 1. two receivers and a send-only sender over umc_ib0"
start_sm sm1
echo "# umc-sm on $UMC_SM"
start r1 $T "$BIN/umc-mckey" "${RECV[@]}"
start r2 $T "$BIN/umc-mckey" "${RECV[@]}"
wait_line r1 '^mckey: joined dgid:' 10 && wait_line r2 '^mckey: joined dgid:' 10 || summary
MLID=
for r in r1 r2; do
	line=$(grep -m1 '^mckey: joined dgid:' "$WORK/$r.out")
	m=$(sed -n "s/^mckey: joined dgid: $MGID mlid \(0x[0-9a-f]*\) sl 0\$/\1/p" <<<"$line")
	if [ -z "$m" ]; then
		fail "$r: JOIN line '$line', expected MGID $MGID"
	elif [ $((m)) -lt $((0xc001)) ] || [ $((m)) -gt $((0xfffe)) ]; then
		fail "$r: MLID $m is no application MLID (0xc001-0xfffe)"
	else
		pass "$r: joined $MGID, MLID $m"
		[ -z "$MLID" ] || [ "$MLID" = "$m" ] || fail "the receivers' MLIDs differ: $MLID, $m"
		MLID=$m
	fi
done
# The sender in the background, as in the README; the SA is asked once it
# has joined, within its 3 s pause before sending.
start s1 $T "$BIN/umc-mckey" "${SEND[@]}"
wait_line s1 '^mckey: joined dgid:' 10 || summary
start sa1 $T "$BIN/umc-sa" -g
finish sa1
expect_rc sa1 0
expect_count sa1 "^mgid $MGID mlid $MLID qkey 0x01234567 pkey 0xffff " 1
expect_count sa1 '^mgid ff12:401b:ffff::ffff:ffff mlid 0xc000 qkey 0x00000b1b pkey 0xffff ' 1
expect_count sa1 '^mgid ' 2
start sa2 $T "$BIN/umc-sa" -m --sm-key 1
finish sa2
expect_rc sa2 0
[ "$(count_lines s1 '^initiating data transfers')" = 0 ] ||
	fail "the sender sent before umc-sa -m answered: its members were not all there"
expect_count sa2 "^mgid $MGID mlid $MLID port_gid fe80::[0-9a-f:]* join_state 0x1 proxy_join 0\$" 2
expect_count sa2 "^mgid $MGID mlid $MLID port_gid fe80::[0-9a-f:]* join_state 0x8 proxy_join 0\$" 1
expect_count sa2 '^mgid ' 3
finish s1
finish r1
finish r2

echo "# 2. every message sent and received"
expect_rc s1 0
expect_output s1 "mckey: starting client
mckey: joining
mckey: joined dgid: $MGID mlid $MLID sl 0
initiating data transfers
data transfers complete
mckey: sent 10 messages
test complete
return status 0"
for r in r1 r2; do
	expect_rc $r 0
	expect_output $r "mckey: starting server
mckey: joining
mckey: joined dgid: $MGID mlid $MLID sl 0
receiving data transfers
data transfers complete
mckey: received 10 messages
test complete
return status 0"
done
stop_sm sm1

echo "# 3. the same sender against umc-sm --no-sendonly"
start_sm sm2 --no-sendonly
start sa3 $T "$BIN/umc-sa" -c
finish sa3
expect_rc sa3 0
expect_line sa3 "send_only_full_member no"
start s2 $T "$BIN/umc-mckey" "${SEND[@]}"
finish s2
expect_rc s2 234
expect_output s2 "mckey: starting client
mckey: joining
mckey: event: RDMA_CM_EVENT_MULTICAST_ERROR, error: -22
mckey: sent 0 messages
test complete
return status -22"
stop_sm sm2

summary
