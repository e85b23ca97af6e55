#!/usr/bin/env bash
# test_ib_capture.sh [unicast] - umcast's simulated InfiniBand packets as
# captured on lo, decoded by tshark as native InfiniBand (umcast(7),
# CAPTURING INFINIBAND TRAFFIC):
#
#  1. umc-sm (its own MLID -> IP map, --mcast-base, so that no other
#     subnet's traffic is in the capture), one umc-mckey receiver and a
#     send-only umc-mckey sender over umc_ib0; tshark captures on lo the
#     UDP datagrams to the MLID's IP group on port 4796 (with "unicast":
#     umc-sm --forwarding unicast, the datagrams to the receiver's data
#     endpoint, which umc-sm -v logs when the receiver's port registers);
#  2. every such datagram goes to the IP group that umc-sm maps the
#     sender's MLID to, port 4796, TTL 1 (unicast: to the receiver's data
#     endpoint, TTL 64);
#  3. scripts/ib2erf.py strips the Ethernet, IPv4 and UDP headers and
#     writes the IB packets as ERF records of type 21 (INFINIBAND), which
#     tshark 4.0 decodes natively (it reads no LINKTYPE_INFINIBAND pcap);
#  4. every record decodes as InfiniBand (LRH, GRH, BTH, DETH, ImmDt), with
#     no malformed packet or expert information, and the values: LNH 3,
#     DLID = the MLID of the sender's JOIN event, SLID = the LID umc-sm
#     gave the sender's port (what its ibv_query_port reports; umc-sm -v
#     logs it with the port GUID when the port registers), SGID = fe80::
#     + that GUID, DGID = the MGID, P_Key 0xFFFF, DestQP 0xFFFFFF, Q_Key
#     0x01234567, SrcQP and ImmDt = the sender's QPN (0x11: UMC_QPN_BASE),
#     PSN 0..N-1;
#  5. tshark's fields equal those of the packets the wire encoders build
#     from these values, and every captured packet equals its rebuilt
#     packet byte for byte, ICRC and VCRC included (ib_capture_check): a
#     copy forwarded by unicast is the very packet sent to an MLID.
#
# Needs tshark, python3 and permission to capture on lo (root or
# CAP_NET_RAW): exits 77 (skipped) otherwise.  Every wait is bounded;
# every process started here is stopped by its PID.
set -u
here=$(cd "$(dirname "$0")" && pwd)

BIN=${UMC_BIN:?UMC_BIN is set by ctest}
SRC=${UMC_SOURCE_DIR:?UMC_SOURCE_DIR is set by ctest}
MCKEY=$BIN/umc-mckey
SMBIN=$BIN/umc-sm
CHECK=$BIN/ib_capture_check
CONV=$SRC/scripts/ib2erf.py
SKIP=77
MODE=${1:-multicast}
N=5
SIZE=37		# payload + pad 3: PadCnt is exercised
QPN=0x11
DATA_PORT=4796

command -v tshark >/dev/null 2>&1 || { echo "SKIP: tshark not installed"; exit $SKIP; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit $SKIP; }
for b in "$MCKEY" "$SMBIN" "$CHECK" "$CONV"; do
	[ -e "$b" ] || { echo "FAIL: $b not found"; exit 1; }
done

# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"
# shellcheck source=capture_lib.sh
. "$here/capture_lib.sh"

# A /18 of multicast addresses for this run's MLIDs (umc-sm --mcast-base;
# aligned, so that tshark can filter on it), and an IPv4 group to join.
BASE=239.$((64 + $$ % 128)).$(((($$ >> 7) % 4) * 64)).0
GA=$((($$ >> 9) % 250 + 1)) GB=$(($$ % 256)) GC=$((RANDOM % 250 + 1))
GROUP=239.$GA.$GB.$GC
MGID_WANT=$(python3 -c 'import ipaddress, sys
print(ipaddress.ip_address("ff12:4001:ffff::%x:%x" % (0x0f00 | int(sys.argv[1]), int(sys.argv[2]) << 8 | int(sys.argv[3]))))' \
	"$GA" "$GB" "$GC")

# 1. The subnet manager, on a port the kernel chooses.
SMARGS=()
[ "$MODE" = unicast ] && SMARGS=(--forwarding unicast)
start sm 120 "$SMBIN" -v --listen 127.0.0.1:0 --mcast-base "$BASE" "${SMARGS[@]}"
wait_line sm '^umc-sm: ready on ' 10 || { show sm; exit 1; }
SM_ADDR=$(sed -n 's/^umc-sm: ready on \([0-9.]*:[0-9]*\) .*/\1/p' "$WORK/sm.out")
export UMC_SM=$SM_ADDR
unset UMC_IB_ADDR UMC_QPN_BASE
echo "# umc-sm on $SM_ADDR ($MODE forwarding), MLIDs from 0xc000 on $BASE/18, group $GROUP"

# The capture: the MLIDs' IP groups on the data port (capture_lib.sh); for
# unicast forwarding, once the receiver registered, its data endpoint.
PCAP=$WORK/cap.pcap
if [ "$MODE" = multicast ]; then
	capture_start "$PCAP" "dst net $BASE/18 and dst port $DATA_PORT"
	rc=$?
	[ $rc -eq 0 ] || exit $rc
fi

# A receiver (every payload checked: -P), then the send-only sender.
start r 60 "$MCKEY" -m "$GROUP" -b 127.0.0.2 -C $N -S $SIZE -P -t 10000
wait_line r '^mckey: joined dgid:' 10
regs=$(grep -c ' registered from ' "$WORK/sm.err")
if [ "$MODE" = unicast ]; then
	RDATA=$(sed -n 's/^umc-sm: port LID [0-9]* GUID 0x[0-9a-f]* registered from .*, data \([0-9.]*:[0-9]*\)$/\1/p' \
		"$WORK/sm.err" | head -1)
	[ -n "$RDATA" ] || { fail "no data endpoint of the receiver in umc-sm's log"; exit 1; }
	DATA_PORT=${RDATA#*:}
	capture_start "$PCAP" "dst host ${RDATA%:*} and dst port $DATA_PORT"
	rc=$?
	[ $rc -eq 0 ] || exit $rc
fi
UMC_QPN_BASE=$QPN timeout -k 2 60 "$MCKEY" -m "$GROUP" -b 127.0.0.2 -s -o -C $N -S $SIZE -w 0 \
	>"$WORK/s.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { fail "the sender exited $rc"; cat "$WORK/s.out"; }
joined=$(grep -m1 '^mckey: joined dgid:' "$WORK/s.out")
MGID=$(sed -n 's/^mckey: joined dgid: \([0-9a-f:]*\) mlid 0x\([0-9a-f]*\) sl 0$/\1/p' <<<"$joined")
MLID=$(sed -n 's/^mckey: joined dgid: \([0-9a-f:]*\) mlid 0x\([0-9a-f]*\) sl 0$/0x\2/p' <<<"$joined")
[ -n "$MLID" ] || { fail "no JOIN line from the sender: '$joined'"; exit 1; }
[ "$MGID" = "$MGID_WANT" ] || fail "MGID $MGID, expected $MGID_WANT"
[ $((MLID)) -ge $((0xc001)) ] && [ $((MLID)) -le $((0xfffe)) ] || fail "MLID $MLID"
# The sender's port: the one registration since the receiver joined.
reg=$(grep ' registered from ' "$WORK/sm.err" | tail -n +$((regs + 1)))
[ "$(wc -l <<<"$reg")" -eq 1 ] || fail "expected one new port registration, got: $reg"
LID=$(sed -n 's/^umc-sm: port LID \([0-9]*\) GUID 0x\([0-9a-f]*\) .*/\1/p' <<<"$reg")
GUID=$(sed -n 's/^umc-sm: port LID \([0-9]*\) GUID 0x\([0-9a-f]*\) .*/\2/p' <<<"$reg")
[ -n "$LID" ] && [ -n "$GUID" ] || { fail "no LID/GUID in '$reg'"; exit 1; }
SGID=$(python3 -c 'import ipaddress, sys; g = sys.argv[1]
print(ipaddress.ip_address("fe80::" + ":".join(g[i:i + 4] for i in range(0, 16, 4))))' "$GUID")
echo "# sender: LID $LID, GID $SGID, QPN $QPN; group $MGID, MLID $MLID"

# Wait (bounded) until tshark has seen the N datagrams of the group (the
# filter lets through nothing else but probes).
capture_wait $N
capture_stop
finish r
expect_rc r 0
expect_line r "mckey: received $N messages"

# 2. The IP datagrams: the MLID's group on the data port, TTL 1; or, forwarded
# by unicast, the receiver's data endpoint, with the default TTL.
IPGRP=$(python3 -c 'import ipaddress, sys
print(ipaddress.ip_address(sys.argv[1]) + int(sys.argv[2], 0) - 0xc000)' "$BASE" "$MLID")
TTL=1
[ "$MODE" = unicast ] && IPGRP=${RDATA%:*} TTL=64
ipok=$(tshark -n -r "$PCAP" -Y "udp.dstport == $DATA_PORT" -T fields -e ip.dst -e udp.dstport -e ip.ttl 2>/dev/null |
	grep -cx "$IPGRP	$DATA_PORT	$TTL")
[ "$ipok" -eq $N ] && pass "$N datagrams to $IPGRP:$DATA_PORT (MLID $MLID), TTL $TTL" ||
	fail "$ipok of $N datagrams to $IPGRP:$DATA_PORT with TTL $TTL"

# 3. To ERF type 21.
ERF=$WORK/cap.erf
python3 "$CONV" -p "$DATA_PORT" "$PCAP" "$ERF" 2>"$WORK/conv.err" || fail "ib2erf.py failed"
cat "$WORK/conv.err"
grep -q "^ib2erf: $N InfiniBand packets written" "$WORK/conv.err" || fail "ib2erf.py did not write $N packets"

# 4. Decoded as InfiniBand, cleanly, with the values.
TS=(tshark -n -r "$ERF")
total=$("${TS[@]}" 2>/dev/null | wc -l)
ibn=$("${TS[@]}" -Y 'infiniband.lrh && infiniband.grh && infiniband.bth && infiniband.deth && infiniband.immdt' 2>/dev/null | wc -l)
[ "$total" -eq $N ] || fail "$total frames in the ERF file, expected $N"
[ "$ibn" -eq $N ] && pass "$N frames decode as InfiniBand LRH+GRH+BTH+DETH+ImmDt" ||
	fail "$ibn of $total frames decode as InfiniBand LRH+GRH+BTH+DETH+ImmDt"
bad=$("${TS[@]}" -Y '_ws.malformed || _ws.expert' 2>/dev/null)
[ -z "$bad" ] || fail "tshark reports problems: $bad"
hdr=$("${TS[@]}" -V -c 1 2>/dev/null)
for h in 'Record type: 0x15 (Type 21: INFINIBAND)' 'Local Route Header' 'Global Route Header' \
	'Base Transport Header' 'DETH - Datagram Extended Transport Header' 'Invariant CRC' 'Variant CRC'; do
	grep -qF "$h" <<<"$hdr" || fail "tshark -V lacks '$h'"
done

FIELDS=(erf.types.type erf.wlen infiniband.lrh.vl infiniband.lrh.lver infiniband.lrh.sl
	infiniband.lrh.lnh infiniband.lrh.dlid infiniband.lrh.pktlen infiniband.lrh.slid
	infiniband.grh.ipver infiniband.grh.tclass infiniband.grh.flowlabel infiniband.grh.paylen
	infiniband.grh.nxthdr infiniband.grh.hoplmt infiniband.grh.sgid infiniband.grh.dgid
	infiniband.bth.opcode infiniband.bth.se infiniband.bth.m infiniband.bth.padcnt
	infiniband.bth.tver infiniband.bth.p_key infiniband.bth.destqp infiniband.bth.a
	infiniband.bth.psn infiniband.deth.q_key infiniband.deth.srcqp infiniband.immdt
	infiniband.invariant.crc infiniband.variant.crc data.len frame.protocols)
args=()
for f in "${FIELDS[@]}"; do args+=(-e "$f"); done
"${TS[@]}" -T fields -E separator='|' -E occurrence=f "${args[@]}" 2>/dev/null >"$WORK/fields.txt"
i=0
while IFS='|' read -r _ _ _ _ _ lnh dlid _ slid _ _ _ _ _ _ sgid dgid op _ _ _ _ pkey dqp _ psn qkey sqp imm _; do
	got="lnh=$lnh dlid=$dlid slid=$slid sgid=$sgid dgid=$dgid op=$op pkey=$pkey destqp=$dqp psn=$psn qkey=$qkey srcqp=$sqp imm=$imm"
	want="lnh=0x03 dlid=$((MLID)) slid=$LID sgid=$SGID dgid=$MGID op=101 pkey=65535 destqp=0xffffff psn=$i qkey=0x0000000001234567 srcqp=0x00000011 imm=00000011"
	if [ "$got" = "$want" ]; then
		pass "packet $i: $got"
	else
		fail "packet $i fields"
		echo "  got:  $got"
		echo "  want: $want"
	fi
	i=$((i + 1))
done <"$WORK/fields.txt"
[ $i -eq $N ] || fail "$i frames with fields, expected $N"

# 5. The same fields as the encoders' packets, and the same bytes.
"$CHECK" "$ERF" $N $SIZE "$MLID" "$LID" "$SGID" "$MGID" $QPN >"$WORK/want.txt" || fail "ib_capture_check"
if diff -u "$WORK/want.txt" "$WORK/fields.txt"; then
	pass "tshark's fields of every packet ($(wc -w <<<"${FIELDS[*]}") each) equal the encoders' packets"
else
	fail "tshark's fields (+) differ from the encoders' packets (-)"
fi

if [ "$FAILS" -eq 0 ]; then
	echo "PASS: $N InfiniBand packets decoded as native InfiniBand and identical to the encoders'"
	exit 0
fi
echo "FAIL: $FAILS check(s) failed"
exit 1
