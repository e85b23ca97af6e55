#!/usr/bin/env bash
# test_mckey.sh - umc-mckey end to end on loopback (127.0.0.1, 239.x groups):
#
#  1. two receivers and a send-only sender (-o): every receiver gets every
#     message with the right bytes (-P: each payload carries umc-mckey's
#     checked pattern), and the exact mckey output;
#  2. a full-member sender (no -o) and a receiver;
#  3. one receiver with two QPs (-c 2): each QP gets every message;
#  4. a receiver with no sender gives up after -t and exits non-zero;
#  5. a full-member sender with -l (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
#  6. a receiver checks each completion: short messages are counted bad and
#     the exit status is non-zero;
#  7. usage errors exit 1.
#
# Senders start only once every receiver has printed its "joined" line, and
# run with -w 0: that line is the readiness signal, no sleep is needed.
#
# Env: UMC_BIN (directory holding umc-mckey; ctest sets it to build/bin).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"

MCKEY=${UMC_BIN:-$here/../../build/bin}/umc-mckey
if [ ! -x "$MCKEY" ]; then
	echo "umc-mckey not found at $MCKEY (set UMC_BIN)"
	exit 1
fi
COUNT=${COUNT:-20}
BIND=127.0.0.1		# never anything else: our traffic stays on lo
T=30			# seconds: bound on every process

receiver_output() {	# group, number of joins, per-qp lines...
	local g=$1 joins=$2 i
	shift 2
	echo "mckey: starting server"
	echo "mckey: joining"
	for ((i = 0; i < joins; i++)); do
		echo "mckey: joined dgid: ::ffff:$g mlid 0x0 sl 0"
	done
	echo "receiving data transfers"
	echo "data transfers complete"
	for i in "$@"; do echo "$i"; done
	echo "test complete"
	echo "return status 0"
}

echo "# 1. two receivers, one send-only sender"
G=$(random_group)
start r1 $T "$MCKEY" -m "$G" -b $BIND -C "$COUNT" -P	# every payload checked
start r2 $T "$MCKEY" -m "$G" -b $BIND -C "$COUNT"
wait_line r1 '^mckey: joined dgid:' 10 && wait_line r2 '^mckey: joined dgid:' 10
start s1 $T "$MCKEY" -m "$G" -b $BIND -s -o -w 0 -C "$COUNT"
finish s1; finish r1; finish r2
expect_rc s1 0
expect_output s1 "mckey: starting client
mckey: joining
mckey: joined dgid: ::ffff:$G mlid 0x0 sl 0
initiating data transfers
data transfers complete
mckey: sent $COUNT messages
test complete
return status 0"
for r in r1 r2; do
	expect_rc $r 0
	expect_output $r "$(receiver_output "$G" 1 "mckey: received $COUNT messages")"
done

echo "# 2. full-member sender and a receiver"
G=$(random_group)
start r3 $T "$MCKEY" -m "$G" -b $BIND -C "$COUNT"
wait_line r3 '^mckey: joined dgid:' 10
start s2 $T "$MCKEY" -m "$G" -b $BIND -s -w 0 -C "$COUNT"
finish s2; finish r3
expect_rc s2 0
expect_line s2 "mckey: sent $COUNT messages"
expect_rc r3 0
expect_output r3 "$(receiver_output "$G" 1 "mckey: received $COUNT messages")"

echo "# 3. one receiver with two QPs (-c 2)"
G=$(random_group)
start r4 $T "$MCKEY" -m "$G" -b $BIND -c 2 -C "$COUNT"
wait_line r4 '^mckey: joined dgid:' 10 2	# both QPs joined
start s3 $T "$MCKEY" -m "$G" -b $BIND -s -o -w 0 -C "$COUNT"
finish s3; finish r4
expect_rc s3 0
expect_line s3 "mckey: sent $COUNT messages"
expect_rc r4 0
expect_count r4 '^mckey: joined dgid: ' 2
expect_count r4 "^mckey: qp 0x[0-9a-f]+: received $COUNT messages\$" 2
expect_line r4 "mckey: received $((2 * COUNT)) messages"
expect_line r4 "return status 0"

echo "# 4. receive timeout without a sender"
G=$(random_group)
start r5 $T "$MCKEY" -m "$G" -b $BIND -C 5 -t 300
finish r5
expect_rc r5 nonzero
expect_line r5 "mckey: timeout: no completion for 300 ms (0 of 5 received)"
expect_line r5 "mckey: received 0 messages"
expect_line r5 "test complete"
expect_count r5 '^return status -[0-9]+$' 1
expect_count r5 '^data transfers complete$' 0

echo "# 5. a full-member sender with -l (no self loopback) still reaches others"
G=$(random_group)
start r6 $T "$MCKEY" -m "$G" -b $BIND -C "$COUNT"
wait_line r6 '^mckey: joined dgid:' 10
start s4 $T "$MCKEY" -m "$G" -b $BIND -s -l -w 0 -C "$COUNT"
finish s4; finish r6
expect_rc s4 0
expect_line s4 "mckey: sent $COUNT messages"
expect_rc r6 0
expect_line r6 "mckey: received $COUNT messages"

echo "# 6. verification: messages shorter than expected are counted bad"
G=$(random_group)
start r7 $T "$MCKEY" -m "$G" -b $BIND -C 5 -S 100
wait_line r7 '^mckey: joined dgid:' 10
start s5 $T "$MCKEY" -m "$G" -b $BIND -s -o -w 0 -C 5 -S 50
finish s5; finish r7
expect_rc s5 0
expect_rc r7 182	# -EBADMSG
expect_count r7 '^mckey: bad completion on qp 0x[0-9a-f]+: byte_len 90, expected 140$' 5
expect_line r7 "mckey: received 5 messages, 5 bad"
expect_line r7 "return status -74"

echo "# 7. usage errors"
start u1 $T "$MCKEY" -x
finish u1
expect_rc u1 1
expect_line u1 $'\t-m multicast_address'
start u2 $T "$MCKEY" -M ff0e::1
finish u2
expect_rc u2 1
expect_line u2 "unmapped multicast address requires binding to source address"
start u3 $T "$MCKEY" -m 239.1.1.1 -P -S 7
finish u3
expect_rc u3 1
expect_line u3 "mckey: -P needs messages of at least 8 bytes (-S)"

summary
