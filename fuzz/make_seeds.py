#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_seeds.py - write the seed inputs of every fuzz target.

Sources: the known-answer packets of tests/data/rocev2_vectors.txt (a copy
of the team's vectors) and the real rxe UD sends of tests/data/*.pcap, plus
a few edge cases derived from them (truncated, misaligned, another opcode,
TVer 8, a pad count with no room, a corrupted ICRC).

  fuzz/make_seeds.py [CORPUS_DIR]       (default: fuzz/corpus next to this file)

Each target's seeds go to CORPUS_DIR/<target>/ under fixed names, so running
the script again rewrites the same files.  Other files there (inputs a
fuzzing run found and someone committed) are left alone.

Input formats:
  ud_decode  the UDP payload, BTH through ICRC
  ib_decode  an InfiniBand packet, LRH through VCRC (tests/data/ib_vectors.txt)
  rx_check   a 42-byte context (fuzz_rx_check.c: flags, source, destination,
             source port, assumed IPv4 ID, TOS, TTL, flow label), then the
             UDP payload
  sm_handler a script of datagrams (fuzz_sm_handler.c): the ones written
             here drive the requests that wait, the caps and the proxy rules
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")
ETH_HLEN = 14
ROCE_PORT = 4791


def vectors():
    """(name, IP packet) for each frame of the vectors file that is RoCEv2 on UDP."""
    out = []
    with open(os.path.join(DATA, "rocev2_vectors.txt")) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split("|")]
            if len(fields) != 4:
                continue
            frame = bytes.fromhex(fields[3])
            if frame[12:14] in (b"\x08\x00", b"\x86\xdd"):
                out.append((fields[0].lower(), frame[ETH_HLEN:]))
    return out


def pcap_packets(name):
    """IP packets of the RoCEv2 datagrams in a classic little-endian pcap."""
    with open(os.path.join(DATA, name), "rb") as f:
        buf = f.read()
    assert struct.unpack_from("<I", buf, 0)[0] == 0xA1B2C3D4, name
    pos, out = 24, []
    while pos + 16 <= len(buf):
        caplen = struct.unpack_from("<I", buf, pos + 8)[0]
        frame = buf[pos + 16:pos + 16 + caplen]
        pos += 16 + caplen
        if frame[12:14] == b"\x08\x00":
            ip = frame[ETH_HLEN:]
            if ip[9] == 17 and struct.unpack_from(">H", ip, 22)[0] == ROCE_PORT:
                out.append(ip)
    return out


def split(ip):
    """(context bytes for fuzz_rx_check, UDP payload) of an IP packet."""
    if ip[0] >> 4 == 4:
        hl = (ip[0] & 15) * 4
        flags = 2 if ip[6] & 0x40 else 0
        src, dst = ip[12:16] + bytes(12), ip[16:20] + bytes(12)
        ip_id, tos, ttl, flow = struct.unpack_from(">H", ip, 4)[0], ip[1], ip[8], 0
    else:
        hl = 40
        flags = 1
        src, dst = ip[8:24], ip[24:40]
        ip_id, ttl = 0, ip[7]
        tos = (ip[0] << 4 | ip[1] >> 4) & 0xFF
        flow = (ip[1] & 15) << 16 | ip[2] << 8 | ip[3]
    sport, _, ulen = struct.unpack_from(">HHH", ip, hl)
    payload = ip[hl + 8:hl + ulen]
    ctx = bytes([flags]) + src + dst + struct.pack(">HHBB", sport, ip_id, tos, ttl)
    ctx += bytes([flow >> 16 & 15, flow >> 8 & 255, flow & 255])
    assert len(ctx) == 42
    return ctx, payload


def ib_vectors():
    """(name, packet) for each packet of tests/data/ib_vectors.txt."""
    out = []
    with open(os.path.join(DATA, "ib_vectors.txt")) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split("|")]
            out.append((fields[0].lower(), bytes.fromhex(fields[-1])))
    return out


def seeds():
    """Yield (target, name, bytes)."""
    for name, pkt in ib_vectors():
        yield "ib_decode", name, pkt
        yield "ib_decode", name + "_bad_vcrc", pkt[:-1] + bytes([pkt[-1] ^ 1])
        yield "ib_decode", name + "_cut", pkt[:-6]
    base = {}
    for name, ip in vectors():
        ctx, pl = split(ip)
        base[name] = (ctx, pl)
    rxe = [("rxe_fullmember", pcap_packets("rxe-mckey-ipv4.pcap")[0]),
           ("rxe_sendonly", pcap_packets("rxe-mckey-ipv4-sendonly.pcap")[0])]
    for name, ip in rxe:
        base[name] = split(ip)

    for name, (ctx, pl) in sorted(base.items()):
        yield "ud_decode", name, pl
        yield "rx_check", name, ctx + pl
        # the ID a UDP socket reports: none, so the receiver assumes 0
        if ctx[0] & 1 == 0 and ctx[35:37] != b"\0\0":
            yield "rx_check", name + "_id0", ctx[:35] + b"\0\0" + ctx[37:] + pl
        bad = bytearray(pl)
        bad[-1] ^= 0x80
        yield "rx_check", name + "_bad_icrc", ctx + bytes(bad)

    ctx, pl = base["v1"]
    edge = {
        "short_1b": pl[:1],
        "bth_only": pl[:12],
        "unaligned_25b": pl[:25],
        "opcode_81": b"\x81" + pl[1:],
        "tver8": pl[:1] + bytes([pl[1] | 8]) + pl[2:],
        "pad3_no_room": pl[:1] + bytes([pl[1] | 0x30]) + pl[2:20] + pl[-4:],
        "cut_at_word": pl[:-8],
    }
    for name, pl2 in edge.items():
        yield "ud_decode", name, pl2
        yield "rx_check", name, ctx + pl2

    for name, script in sm_handler_seeds():
        yield "sm_handler", name, script
    for name, msg in sm_proto_seeds():
        yield "sm_proto", name, msg


# --- umc-sm's handler (fuzz_sm_handler.c) -----------------------------------
# A script is ops: op (1) | source (1) | length (2) | datagram.  op bit 0
# writes the port's LID and the epoch into the header; op >> 1 advances the
# clock by that many 50 ms.  source & 7 is the endpoint (port 50000 + n,
# source host n % 3 in the target), source bit 7 leaves waiting requests
# waiting.  Endpoints 0, 1, 2 are registered first: LIDs 2, 3, 4, GUIDs
# 0x0200000000000002.. (umc-sm's own), GIDs fe80:: + GUID.
SM_REGISTER, SM_RENEW, SM_UNREGISTER, SM_SA = 1, 2, 3, 4
SM_SUBSCRIBE, SM_FWD_ACK, SM_UNSUBSCRIBE, SM_SQUATTED, SM_FORWARD = 6, 7, 8, 9, 0x86
SM_KEY = 1  # the fuzz target runs umc-sm with --sm-key 1 given
CREATE_MASK, JOIN_MASK = 0x130C7, 0x10003


def sm_msg(mtype, body=b"", tid=1):
    return struct.pack(">IBBHQHHI", 0x554D4353, 1, mtype, 0, 0, 0, 0, tid) + body


def sm_op(src, msg, fix=True, clock=0, keep=False):
    return bytes([clock << 1 | int(fix), src | (0x80 if keep else 0)]) + \
        struct.pack(">H", len(msg)) + msg


def sm_port_gid(n):
    return bytes.fromhex("fe80000000000000") + struct.pack(">Q", 0x0200000000000002 + n)


def sa_mad(method, comp=0, sm_key=0, tid=1, mgid=b"\0" * 16, port_gid=b"\0" * 16, join=0):
    hdr = struct.pack(">BBBBHHQHHI", 1, 3, 2, method, 0, 0, tid, 0x0038, 0, 0)
    hdr += bytes(12) + struct.pack(">QHHQ", sm_key, 0, 0, comp)
    rec = mgid + port_gid + struct.pack(">IHBBHBBIBB", 0x01234567, 0, 0, 0, 0xFFFF, 0, 0, 0,
                                        join, 0)
    return hdr + rec + bytes(256 - len(hdr) - len(rec))


def mgid(n):
    return bytes.fromhex("ff124001ffff00000000000000000000")[:12] + struct.pack(">I", n)


def fwd_body(mlid, kind, version, total, offset, entries):
    """A FORWARD body: its fixed part, then (addr, port, lid) entries."""
    return struct.pack(">HBBIHHHH", mlid, kind, 0, version, total, offset, len(entries), 0) + \
        b"".join(struct.pack(">IHH", *e) for e in entries)


def sm_proto_seeds():
    """The forwarding messages (sm_proto.h): requests, and FORWARD segments."""
    mlid = struct.pack(">HH", 0xC001, 0)
    yield "subscribe", sm_msg(SM_SUBSCRIBE, mlid)
    yield "unsubscribe", sm_msg(SM_UNSUBSCRIBE, mlid)
    yield "squatted", sm_msg(SM_SQUATTED, mlid)
    yield "fwd_ack", sm_msg(SM_FWD_ACK, struct.pack(">HHI", 0xC001, 0, 3))
    yield "forward_mcast", sm_msg(SM_FORWARD, fwd_body(0xC001, 1, 1, 1, 0, [(0xEFFFC001, 4796, 0)]))
    yield "forward_empty", sm_msg(SM_FORWARD, fwd_body(0xC001, 2, 2, 0, 0, []))
    ents = [(0x0A000000 + i, 40000 + i, 2 + i) for i in range(128)]
    yield "forward_seg1", sm_msg(SM_FORWARD, fwd_body(0xC002, 2, 5, 130, 0, ents))
    yield "forward_seg2", sm_msg(SM_FORWARD, fwd_body(0xC002, 2, 5, 130, 128, ents[:2]))
    yield "forward_refused", sm_msg(SM_FORWARD)[:6] + struct.pack(">H", 3) + sm_msg(SM_FORWARD)[8:]


def sm_handler_seeds():
    """Scripts for the requests that wait, the caps, the proxy rules and forwarding."""
    def sa(src, mad, **kw):
        return sm_op(src, sm_msg(SM_SA, mad), **kw)

    def register(src, nonce, **kw):
        return sm_op(src, sm_msg(SM_REGISTER, struct.pack(">IHHQQ", 0x7F000001, 6000, 0, 0,
                                                          nonce)), fix=False, **kw)

    scan = sa_mad(0x12)  # GetTable of every group
    # new ports and scans wait; a RENEW goes first; a port leaves with its scans waiting
    yield "defer_turns", b"".join([
        register(3, 31, keep=True), register(4, 41, keep=True),
        sa(0, scan, keep=True), sa(1, scan, keep=True), sa(1, scan, keep=True),
        sa(2, scan, keep=True), sm_op(0, sm_msg(SM_RENEW), keep=True),
        sm_op(1, sm_msg(SM_UNREGISTER), keep=True), sa(0, scan)])
    # caps (the target's: 2 ports and 10 memberships a host, 6 a port, 2 and 3 transfers),
    # BUSY, the port muted, heard again 100 ms later
    ops = [register(n, 100 + n) for n in (3, 4, 5, 6, 7)]
    ops += [sa(0, sa_mad(0x02, CREATE_MASK, mgid=mgid(n), port_gid=sm_port_gid(0), join=1))
            for n in range(8)]
    ops += [sa(0, sa_mad(0x12, tid=t), clock=2 if t == 4 else 0) for t in range(1, 6)]
    yield "caps_busy", b"".join(ops)
    # proxy joins: refused without the key, taken with it; the port's own join takes over
    proxy = sa_mad(0x02, JOIN_MASK, mgid=mgid(1), port_gid=sm_port_gid(1), join=2)
    yield "proxy_key", b"".join([
        sa(0, sa_mad(0x02, CREATE_MASK, mgid=mgid(1), port_gid=sm_port_gid(0), join=1)),
        sa(0, proxy), sa(0, proxy[:36] + struct.pack(">Q", SM_KEY) + proxy[44:]),
        sa(1, sa_mad(0x02, JOIN_MASK, mgid=mgid(1), port_gid=sm_port_gid(1), join=1)),
        sa(0, sa_mad(0x15, JOIN_MASK, SM_KEY, mgid=mgid(1), port_gid=sm_port_gid(1), join=1)),
        sa(2, sa_mad(0x15, JOIN_MASK, mgid=mgid(1), port_gid=sm_port_gid(1), join=1))])

    # forwarding, --forwarding unicast (odd length): port 2 sends to the group's MLID
    # (0xC001, the first after the broadcast group's); port 1's join is held until
    # port 2 acknowledges; port 1's leave waits until the hold's time passes (250 ms);
    # resends; port 2 renews; unsubscribes
    def fwd(src, mtype, body, **kw):
        return sm_op(src, sm_msg(mtype, body), **kw)
    sub = fwd(2, SM_SUBSCRIBE, struct.pack(">HH", 0xC001, 0))
    create = sa(0, sa_mad(0x02, CREATE_MASK, mgid=mgid(7), port_gid=sm_port_gid(0), join=1))
    yield "fwd_unicast_hold", b"".join([
        create, sub, fwd(2, SM_FWD_ACK, struct.pack(">HHI", 0xC001, 0, 1)),
        sa(1, sa_mad(0x02, JOIN_MASK, mgid=mgid(7), port_gid=sm_port_gid(1), join=1), clock=1),
        fwd(2, SM_FWD_ACK, struct.pack(">HHI", 0xC001, 0, 2)),
        sa(1, sa_mad(0x15, JOIN_MASK, mgid=mgid(7), port_gid=sm_port_gid(1), join=1), clock=6),
        sm_op(2, sm_msg(SM_RENEW), clock=20),
        fwd(2, SM_UNSUBSCRIBE, struct.pack(">HH", 0xC001, 0))]) + b"\0"
    # multicast mode (even length): a member's SQUATTED switches the MLID to unicast,
    # a non-member's is refused
    yield "fwd_squatted", b"".join([
        create, sub, fwd(1, SM_SQUATTED, struct.pack(">HH", 0xC001, 0)),
        fwd(0, SM_SQUATTED, struct.pack(">HH", 0xC001, 0), clock=1),
        sa(1, sa_mad(0x02, JOIN_MASK, mgid=mgid(7), port_gid=sm_port_gid(1), join=1), clock=8)])


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
    n, seen = 0, set()
    for target, name, data in seeds():
        if (target, data) in seen:  # e.g. V6 is V1 with fields the ICRC masks
            continue
        seen.add((target, data))
        d = os.path.join(corpus, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        n += 1
    print(f"{n} seeds written under {corpus}")


if __name__ == "__main__":
    main()
