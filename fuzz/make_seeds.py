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
