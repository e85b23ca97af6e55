#!/usr/bin/env bash
# test_capture.sh - umcast's RoCEv2 packets as captured on lo: tshark must
# decode them as RoCE without errors, with the right field values, and
# every datagram must equal, byte for byte, what the wire encoders build
# from the expected values (capture_check; the encoders are themselves
# checked against the shared vectors by unit/test_wire).
#
# capture_sender (public API only) binds 127.0.0.1, joins the group as a
# send-only full member and sends the five messages of capture_msgs.h with
# UMC_QPN_BASE=0x11, so its QPN is 0x11 and its UDP source port 0xdf94
# (57236), as rxe's first QP in vector V1.
#
# Needs tshark and permission to capture on lo (root or CAP_NET_RAW):
# exits 77 (skipped) otherwise.  Every wait is bounded.
#
# References: rxe_net.c prepare4() and prepare_udp_hdr(), IBA 9.2-9.3.4
# (field values); Wireshark's InfiniBand dissector (its fields and the
# mellanox_eoib heuristic); docs/design.md, "RoCEv2 fidelity" (ID 0 + DF);
# IBA Annex A17.3.3 (the ICRC).
set -u
here=$(cd "$(dirname "$0")" && pwd)

BIN=${UMC_BIN:?UMC_BIN is set by ctest}
SENDER=$BIN/capture_sender
CHECK=$BIN/capture_check
SKIP=77
N=5
SPORT=57236
QPN=0x11

command -v tshark >/dev/null 2>&1 || { echo "SKIP: tshark not installed"; exit $SKIP; }
for b in "$SENDER" "$CHECK"; do
	[ -x "$b" ] || { echo "FAIL: $b not built"; exit 1; }
done

# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"
# shellcheck source=capture_lib.sh
. "$here/capture_lib.sh"

# QPN 0x11 means UDP source port 0xdf94, which a send socket binds
# exclusively: two capture tests on one host (say a plain and a sanitizer
# build run side by side) take turns.
exec 9>"${TMPDIR:-/tmp}/umcast-capture-qpn0x11.lock"
flock -w 120 9 || { echo "FAIL: another capture test holds the QPN 0x11 lock"; exit 1; }

# A group of this process (other tests use other ranges).
GROUP="239.252.$((($$ >> 8) & 255)).$(($$ & 255))"
PCAP=$WORK/cap.pcap

capture_start "$PCAP" "dst host $GROUP and dst port 4791"
rc=$?
[ $rc -eq 0 ] || exit $rc

UMC_QPN_BASE=$QPN timeout -k 2 30 "$SENDER" "$GROUP" 127.0.0.1 >"$WORK/sender.out" 2>&1
rc=$?
cat "$WORK/sender.out"
[ $rc -eq 0 ] || fail "capture_sender exited $rc"
grep -qx "qpn $QPN" "$WORK/sender.out" || fail "sender QPN is not $QPN"

# Wait (bounded) until tshark has seen the N datagrams to the group.
capture_wait $N
capture_stop

TS=(tshark -n -r "$PCAP" --disable-heuristic mellanox_eoib)
F="ip.dst == $GROUP"

# 1. Every datagram to the group decodes as RoCEv2 (RRoCE) UD SEND.
total=$("${TS[@]}" -Y "$F" 2>/dev/null | wc -l)
roce=$("${TS[@]}" -Y "$F && infiniband && (infiniband.bth.opcode == 100 || infiniband.bth.opcode == 101)" 2>/dev/null | wc -l)
[ "$total" -eq $N ] || fail "$total datagrams to the group in the capture, expected $N"
[ "$roce" -eq $N ] || fail "$roce of $total datagrams decode as RoCE UD SEND"

# 2. No malformed packet, no expert information of any severity.
bad=$("${TS[@]}" -Y "$F && (_ws.malformed || _ws.expert)" 2>/dev/null)
[ -z "$bad" ] || fail "tshark reports problems: $bad"
# (The detector works: with the EoIB heuristic on, tshark 4.0 marks the
# 0-byte send Malformed.  Informational only.)
quirk=$(tshark -n -r "$PCAP" -Y "$F && _ws.malformed" 2>/dev/null | wc -l)
echo "# with the mellanox_eoib heuristic enabled: $quirk malformed (tshark quirk)"

# 3. Field values, one line per frame ('|'-separated: an absent field is
# an empty column), compared with the expected table.
# message: opcode pad immdt data.len (payload + pad; absent for 0 bytes)
expect=(
	"100 0 - -"
	"101 3 11223344 4"
	"100 3 - 16"
	"101 0 00000011 1024"
	"101 2 fedcba98 104"
)
i=0
"${TS[@]}" -Y "$F" -T fields -E separator='|' -E occurrence=f \
	-e _ws.col.Protocol -e ip.id -e ip.flags.df -e ip.ttl -e ip.dsfield \
	-e udp.srcport -e udp.dstport -e udp.checksum \
	-e infiniband.bth.opcode -e infiniband.bth.se -e infiniband.bth.m \
	-e infiniband.bth.padcnt -e infiniband.bth.tver -e infiniband.bth.p_key \
	-e infiniband.bth.destqp -e infiniband.bth.a -e infiniband.bth.psn \
	-e infiniband.deth.q_key -e infiniband.deth.srcqp -e infiniband.immdt \
	-e data.len 2>/dev/null >"$WORK/fields.txt"
while IFS='|' read -r proto id df ttl ds sp dp csum op se m pad tver pkey dqp a psn qkey sqp imm dlen; do
	[ $i -lt $N ] || { fail "extra frame: $proto $op psn $psn"; continue; }
	read -r w_op w_pad w_imm w_dlen <<<"${expect[$i]}"
	[ "$w_imm" = - ] && w_imm=
	[ "$w_dlen" = - ] && w_dlen=
	got="$proto id=$id df=$df ttl=$ttl ds=$ds sport=$sp dport=$dp udpcsum=$csum op=$op se=$se m=$m pad=$pad tver=$tver pkey=$pkey destqp=$dqp a=$a psn=$psn qkey=$qkey srcqp=$sqp imm=$imm len=$dlen"
	want="RRoCE id=0x0000 df=1 ttl=64 ds=0x00 sport=$SPORT dport=4791 udpcsum=0x0000 op=$w_op se=0 m=0 pad=$w_pad tver=0 pkey=65535 destqp=0xffffff a=0 psn=$i qkey=0x0000000001234567 srcqp=0x00000011 imm=$w_imm len=$w_dlen"
	if [ "$got" = "$want" ]; then
		echo "ok: message $i: $got"
	else
		fail "message $i fields"
		echo "  got:  $got"
		echo "  want: $want"
	fi
	i=$((i + 1))
done <"$WORK/fields.txt"
[ $i -eq $N ] || fail "$i frames with fields, expected $N"

# 4. Byte for byte against the wire encoders.
"$CHECK" "$PCAP" "$GROUP" 127.0.0.1 $SPORT $QPN || fail "capture_check"

if [ "$FAILS" -eq 0 ]; then
	echo "PASS: $N RoCEv2 datagrams decoded cleanly and identical to the encoder"
	exit 0
fi
echo "FAIL: $FAILS check(s) failed"
exit 1
