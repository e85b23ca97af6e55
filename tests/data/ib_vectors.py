#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Known-answer InfiniBand UD packets for umcast's IB codec (src/wire/ib.c).

An implementation of its own, from the field definitions of IBA Vol 1
(LRH 7.7, GRH 8.3, BTH 9.2, DETH 9.3.3, ImmDt 9.3.4, ICRC 7.8.1, VCRC
7.8.2), sharing nothing with the C code: fields are packed from bit
strings, the ICRC is zlib's CRC-32 over a copy with the variant fields set
to ones, and the VCRC is a bit-serial CRC-16 written the "textbook" way
(most significant bit first over bit-reversed input, polynomial 0x100B,
register 0xFFFF, result reversed and complemented), not the reflected
nibble table the C code uses.

  ib_vectors.py            print the vectors file (tests/data/ib_vectors.txt)
  ib_vectors.py --check F  recompute every vector of F; exit 1 on a mismatch
"""
import sys
import zlib


def bits(*fields):
    """Pack (value, width) pairs, most significant first, into bytes."""
    v, n = 0, 0
    for val, width in fields:
        assert 0 <= val < (1 << width), (val, width)
        v = (v << width) | val
        n += width
    assert n % 8 == 0
    return v.to_bytes(n // 8, "big")


def reverse(v, width):
    return int(format(v, "0%db" % width)[::-1], 2)


def vcrc(data):
    reg = 0xFFFF
    for byte in data:
        b = reverse(byte, 8)
        for i in range(7, -1, -1):
            top = (reg >> 15) & 1
            reg = (reg << 1) & 0xFFFF
            if top ^ ((b >> i) & 1):
                reg ^= 0x100B
    return reverse(reg, 16) ^ 0xFFFF


def icrc(pkt, lnh):
    m = bytearray(pkt)
    if lnh == 3:
        m[0:8] = b"\xff" * 8                 # the whole LRH
        m[8] |= 0x0F                         # TClass (high nibble)
        m[9:12] = b"\xff\xff\xff"            # TClass (low nibble), FlowLabel
        m[15] = 0xFF                         # HopLmt
        bth = 48
    else:
        m[0] |= 0xF0                         # VL
        bth = 8
    m[bth + 4] = 0xFF                        # BTH Resv8a
    return zlib.crc32(bytes(m)) & 0xFFFFFFFF


def gid(text):
    import ipaddress
    return ipaddress.IPv6Address(text).packed


def packet(lnh, vl, sl, dlid, slid, opcode, se, pkey, dqpn, psn, qkey, sqpn,
           payload, imm=None, tclass=0, flow=0, hop=0, sgid=None, dgid=None,
           lver=0, tver=0):
    pad = (-len(payload)) % 4
    bth = bits((opcode, 8), (se, 1), (0, 1), (pad, 2), (tver, 4), (pkey, 16),
               (0, 8), (dqpn, 24), (0, 1), (0, 7), (psn, 24))
    deth = bits((qkey, 32), (0, 8), (sqpn, 24))
    ext = b"" if imm is None else imm.to_bytes(4, "big")
    transport = bth + deth + ext + payload + b"\0" * pad
    grh = b""
    if lnh == 3:
        grh = bits((6, 4), (tclass, 8), (flow, 20), (len(transport) + 4, 16),
                   (0x1B, 8), (hop, 8)) + sgid + dgid
    words = (8 + len(grh) + len(transport) + 4) // 4
    lrh = bits((vl, 4), (lver, 4), (sl, 4), (0, 2), (lnh, 2), (dlid, 16),
               (0, 5), (words, 11), (slid, 16))
    body = lrh + grh + transport
    ic = icrc(body, lnh)
    body += ic.to_bytes(4, "little")
    vc = vcrc(body)
    return ic, vc, body + vc.to_bytes(2, "little")


PREFIX = "fe80::"
VECTORS = [
    ("I1", "global UD SEND_ONLY 0x64 to MLID 0xc001, MGID ff12:4001:ffff::e001:101, "
     "16 B payload, SLID 2, SrcQP 0x11, Q_Key 0x01234567, PSN 0, SL 0, hop 0",
     dict(lnh=3, vl=0, sl=0, dlid=0xC001, slid=2, opcode=0x64, se=0, pkey=0xFFFF,
          dqpn=0xFFFFFF, psn=0, qkey=0x01234567, sqpn=0x11, payload=bytes(range(16)),
          sgid=gid("fe80::2:c903:0:2"), dgid=gid("ff12:4001:ffff::e001:101"))),
    ("I2", "global UD SEND_ONLY_WITH_IMMEDIATE 0x65, SE, 13 B payload (pad 3), "
     "ImmDt 0xdeadbeef, SL 3, TClass 0x68, FlowLabel 0x12345, HopLmt 255",
     dict(lnh=3, vl=0, sl=3, dlid=0xC0FF, slid=0x1234, opcode=0x65, se=1, pkey=0xFFFF,
          dqpn=0xFFFFFF, psn=0x123456, qkey=0x11111111, sqpn=0x2A,
          payload=b"Hello, RoCE!\n", imm=0xDEADBEEF, tclass=0x68, flow=0x12345, hop=255,
          sgid=gid("fe80::11:2233:4455:6677"), dgid=gid("ff15:4001:ffff::1:2:3"))),
    ("I3", "local UD SEND_ONLY 0x64 unicast DLID 5, DestQP 0x1234, 1 B payload (pad 3), "
     "VL 0, SL 1, P_Key 0x7fff",
     dict(lnh=2, vl=0, sl=1, dlid=5, slid=3, opcode=0x64, se=0, pkey=0x7FFF,
          dqpn=0x1234, psn=7, qkey=0x01234567, sqpn=0x13, payload=b"Z")),
    ("I4", "global UD SEND_ONLY 0x64, 0 B payload (zero-length SEND), unicast DLID 0x20",
     dict(lnh=3, vl=0, sl=0, dlid=0x20, slid=0x21, opcode=0x64, se=0, pkey=0xFFFF,
          dqpn=0xABCDE, psn=1, qkey=0x80010000, sqpn=1, payload=b"",
          sgid=gid("fe80::21"), dgid=gid("fe80::20"))),
    ("I5", "same as I1 but VL 7, SL 9, TClass 0xff, FlowLabel 0xabcde, HopLmt 1, "
     "Resv8a 0xc0 (variant fields only) -> ICRC must equal I1's, VCRC differs",
     dict(lnh=3, vl=7, sl=9, dlid=0xC001, slid=2, opcode=0x64, se=0, pkey=0xFFFF,
          dqpn=0xFFFFFF, psn=0, qkey=0x01234567, sqpn=0x11, payload=bytes(range(16)),
          tclass=0xFF, flow=0xABCDE, hop=1,
          sgid=gid("fe80::2:c903:0:2"), dgid=gid("ff12:4001:ffff::e001:101"))),
    ("I6", "global UD SEND_ONLY 0x64, 4096 B payload (an IB MTU), MLID 0xfffe",
     dict(lnh=3, vl=0, sl=0, dlid=0xFFFE, slid=0xBFFF, opcode=0x64, se=0, pkey=0xFFFF,
          dqpn=0xFFFFFF, psn=0xFFFFFF, qkey=0x01234567, sqpn=0xFFFFFE,
          payload=bytes((i * 7 + 3) & 0xFF for i in range(4096)),
          sgid=gid("fe80::bfff"), dgid=gid("ff12:4001:ffff::ffff:fffe"))),
]


def build(name, desc, f):
    ic, vc, pkt = packet(**f)
    if name == "I5":  # Resv8a is a BTH byte packet() writes as 0
        pkt = bytearray(pkt)
        pkt[48 + 4] = 0xC0
        vc = vcrc(bytes(pkt[:-2]))
        pkt[-2:] = vc.to_bytes(2, "little")
        pkt = bytes(pkt)
    return ic, vc, pkt


def main():
    lines = [
        "# InfiniBand UD known-answer vectors (generated by ib_vectors.py)",
        "# Format: NAME | description | ICRC (wire order) | VCRC (wire order) | packet, LRH..VCRC, hex",
        "# ICRC: CRC-32 (IEEE, as zlib) with the IBA 7.8.1 variant fields as ones, least significant",
        "# byte first; VCRC: CRC-16 0x100B, register 0xFFFF, complemented, least significant byte first.",
        "",
    ]
    for name, desc, f in VECTORS:
        ic, vc, pkt = build(name, desc, f)
        lines.append("%s | %s | %s | %s | %s" % (name, desc, ic.to_bytes(4, "little").hex(),
                                               vc.to_bytes(2, "little").hex(), pkt.hex()))
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        want = [l for l in open(sys.argv[2]).read().splitlines()]
        if want != lines:
            print("ib_vectors: %s differs from the recomputed vectors" % sys.argv[2])
            return 1
        print("ib_vectors: %d vectors check" % len(VECTORS))
        return 0
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
