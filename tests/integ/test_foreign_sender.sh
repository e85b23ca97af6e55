#!/usr/bin/env bash
# test_foreign_sender.sh - a umc-mckey receiver counts every message of a
# sender that is not umc-mckey.  The sender here is a real rdma-core mckey
# on a Linux rxe host: the 20 UD sends of tests/data/rxe-mckey-ipv4*.pcap
# (100-byte messages of a buffer mckey never fills), replayed byte for byte
# onto loopback by pcap_replay, with rxe's source address and port, TTL,
# DF and non-zero IPv4 IDs, so that their ICRC still verifies.
#
#  1. A receiver (-C 20 -S 100) accepts and counts all 20, says their
#     payload was not checked, and exits 0; UMC_STATS shows each accepted
#     through the IPv4-ID solver.
#  2. A receiver with -P (only umc-mckey senders expected) counts all 20 as
#     bad and exits with -EBADMSG.
#
# In a private network namespace (root; exits 77 otherwise): the replayed
# packets carry rxe's address 10.77.0.2 and group 239.1.1.1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"
BIN=${UMC_BIN:?UMC_BIN is set by ctest}
DATA=${UMC_TEST_DATA:?UMC_TEST_DATA is set by ctest}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (namespace, raw socket)"; exit 77; }
NS=umc-foreign-$$
ip netns add "$NS" 2>/dev/null || { echo "SKIP: cannot create a namespace"; exit 77; }
trap 'cleanup; ip netns del "$NS" 2>/dev/null' EXIT
ip -n "$NS" link set lo up
G=239.1.1.1		# the group of the capture
N=20			# UD sends in the two captures
T=30

IN_NS=(ip netns exec "$NS" env UMC_STATS=1)
start r1 $T "${IN_NS[@]}" "$BIN/umc-mckey" -m $G -b 127.0.0.1 -C $N -S 100
start r2 $T "${IN_NS[@]}" "$BIN/umc-mckey" -m $G -b 127.0.0.1 -C $N -S 100 -P
wait_line r1 '^mckey: joined dgid:' 10 && wait_line r2 '^mckey: joined dgid:' 10
out=$(ip netns exec "$NS" "$BIN/pcap_replay" lo "$DATA/rxe-mckey-ipv4.pcap" \
	"$DATA/rxe-mckey-ipv4-sendonly.pcap" 2>&1)
if [ "$out" = "replayed $N datagrams" ]; then
	pass "$out"
else
	fail "pcap_replay: $out"
fi
finish r1; finish r2

echo "# 1. any payload is accepted and counted"
expect_rc r1 0
expect_line r1 "mckey: received $N messages"
expect_line r1 "mckey: $N messages not from umc-mckey: payload not checked"
expect_line r1 "data transfers complete"
if grep -Eq "umcast: umc_lo .* rx_delivered=$N .*rx_icrc_id_solved=$N " "$WORK/r1.err"; then
	pass "r1: $N delivered, each with its IPv4 ID solved from the ICRC"
else
	fail "r1: counters"; show r1
fi

echo "# 2. -P: only umc-mckey senders expected"
expect_rc r2 182	# -EBADMSG
expect_line r2 "mckey: received $N messages, $N bad"
expect_count r2 '^mckey: bad completion on qp 0x[0-9a-f]+: no umc-mckey marker in the payload$' 10

summary
