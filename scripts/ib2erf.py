#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ib2erf.py - turn a capture of umcast's simulated InfiniBand traffic into
an ERF file that Wireshark decodes as native InfiniBand.

umcast's IB link carries each InfiniBand packet (LRH, GRH, BTH, DETH,
ImmDt, payload, pad, ICRC, VCRC) as the whole payload of one UDP datagram:
to the IP group of its MLID on umc-sm's data port (4796 by default), or,
unicast, to the data endpoint of the destination LID's port.  Wireshark
4.0 cannot read LINKTYPE_INFINIBAND (247) pcap files, but it decodes ERF
records of type 21 (INFINIBAND) natively.  This script reads a pcap or
pcapng capture, keeps the UDP datagrams to the given ports, drops the
link, IPv4 and UDP headers, and writes each IB packet as one ERF record
with the frame's time stamp:

    tshark -i lo -f 'udp dst port 4796' -w ib.pcapng   # while umcast sends
    scripts/ib2erf.py ib.pcapng ib.erf
    tshark -r ib.erf -V                                 # LRH, GRH, BTH, DETH, ICRC, VCRC

Link types read: Ethernet (1), raw IPv4 (101, 228), Linux cooked v1 (113)
and v2 (276).  Fragmented IPv4 datagrams (an IB packet larger than the
interface MTU) are reassembled.  Nothing else in the capture is written;
the counts go to standard error.  Exit status 0, 1 on a malformed input
file, 2 on a usage error.

ERF record (Endace ERF, type 21): 64-bit little-endian time stamp (seconds
in the high 32 bits, binary fraction in the low 32), type 21, flags 0x04
(varying record length), rlen = 16 + packet length, loss counter 0, wlen
= packet length (all 16-bit fields big-endian), then the IB packet.
"""

import argparse
import struct
import sys

ERF_TYPE_INFINIBAND = 21
ERF_FLAG_VLEN = 0x04
ETH_P_IP = 0x0800
ETH_P_8021Q = 0x8100
IPPROTO_UDP = 17


class BadInput(Exception):
    pass


def pcap_frames(data):
    """(linktype, seconds, fraction of a second, frame bytes) of a classic pcap."""
    magic = data[:4]
    kinds = {b"\xd4\xc3\xb2\xa1": ("<", 1e6), b"\xa1\xb2\xc3\xd4": (">", 1e6),
             b"\x4d\x3c\xb2\xa1": ("<", 1e9), b"\xa1\xb2\x3c\x4d": (">", 1e9)}
    if magic not in kinds:
        raise BadInput("not a pcap file")
    order, units = kinds[magic]
    if len(data) < 24:
        raise BadInput("truncated pcap header")
    linktype = struct.unpack(order + "I", data[20:24])[0] & 0x0FFFFFFF
    off = 24
    while off + 16 <= len(data):
        sec, sub, caplen, _ = struct.unpack(order + "IIII", data[off:off + 16])
        off += 16
        if off + caplen > len(data):
            raise BadInput("truncated pcap record")
        yield linktype, sec, sub / units, data[off:off + caplen]
        off += caplen


def pcapng_frames(data):
    """The same for pcapng: enhanced and simple packet blocks."""
    off, order, ifaces = 0, "<", []
    while off + 12 <= len(data):
        btype = struct.unpack(order + "I", data[off:off + 4])[0]
        if btype == 0x0A0D0D0A:  # section header: its byte-order magic decides
            bom = data[off + 8:off + 12]
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            ifaces = []
        blen = struct.unpack(order + "I", data[off + 4:off + 8])[0]
        if blen < 12 or off + blen > len(data):
            raise BadInput("truncated pcapng block")
        body = data[off + 8:off + blen - 4]
        if btype == 1:  # interface description: link type, time resolution
            linktype = struct.unpack(order + "H", body[:2])[0]
            tsres = 1e6
            opt = 8
            while opt + 4 <= len(body):
                code, olen = struct.unpack(order + "HH", body[opt:opt + 4])
                if code == 0:
                    break
                if code == 9 and olen >= 1:  # if_tsresol
                    v = body[opt + 4]
                    tsres = float(2 ** (v & 0x7F)) if v & 0x80 else 10.0 ** v
                opt += 4 + (olen + 3) // 4 * 4
            ifaces.append((linktype, tsres))
        elif btype == 6:  # enhanced packet
            iface, hi, lo, caplen = struct.unpack(order + "IIII", body[:16])
            if iface >= len(ifaces):
                raise BadInput("packet of an undescribed interface")
            linktype, tsres = ifaces[iface]
            ts = (hi << 32 | lo) / tsres
            yield linktype, int(ts), ts - int(ts), body[20:20 + caplen]
        elif btype == 3 and ifaces:  # simple packet: no time stamp
            origlen = struct.unpack(order + "I", body[:4])[0]
            yield ifaces[0][0], 0, 0.0, body[4:4 + origlen]
        off += blen


def ipv4_of(linktype, frame):
    """The IPv4 datagram a frame carries, or None."""
    if linktype == 1:  # Ethernet, possibly with 802.1Q tags
        off = 12
        while off + 2 <= len(frame):
            etype = struct.unpack(">H", frame[off:off + 2])[0]
            if etype != ETH_P_8021Q:
                break
            off += 4
        else:
            return None
        return frame[off + 2:] if etype == ETH_P_IP else None
    if linktype in (101, 228):  # raw IP / IPv4
        return frame if frame[:1] and frame[0] >> 4 == 4 else None
    if linktype == 113:  # Linux cooked v1: protocol at 14
        return frame[16:] if frame[14:16] == b"\x08\x00" else None
    if linktype == 276:  # Linux cooked v2: protocol at 0
        return frame[20:] if frame[0:2] == b"\x08\x00" else None
    return None


class Reassembler:
    """IPv4 fragments put back together (RFC 791), keyed by src, dst, id."""

    def __init__(self):
        self.parts = {}

    def add(self, ip):
        """A complete datagram (header + payload) or None while incomplete."""
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        frag = struct.unpack(">H", ip[6:8])[0]
        more, offset = frag & 0x2000, (frag & 0x1FFF) * 8
        if not more and offset == 0:
            return ip[:total]
        key = (ip[12:16], ip[16:20], ip[4:6], ip[9])
        entry = self.parts.setdefault(key, {"pieces": {}, "end": None, "hdr": None})
        entry["pieces"][offset] = ip[ihl:total]
        if offset == 0:
            entry["hdr"] = ip[:ihl]
        if not more:
            entry["end"] = offset + total - ihl
        if entry["end"] is None or entry["hdr"] is None:
            return None
        payload, pos = b"", 0
        for start in sorted(entry["pieces"]):
            if start > pos:
                return None  # a hole: wait for more
            payload += entry["pieces"][start][pos - start:]
            pos = max(pos, start + len(entry["pieces"][start]))
        if pos < entry["end"]:
            return None
        del self.parts[key]
        return entry["hdr"] + payload[:entry["end"]]


def erf_record(sec, frac, packet):
    ts = sec << 32 | min(int(frac * (1 << 32)), 0xFFFFFFFF)
    return struct.pack("<Q", ts) + struct.pack(
        ">BBHHH", ERF_TYPE_INFINIBAND, ERF_FLAG_VLEN, 16 + len(packet), 0,
        len(packet)) + packet


def convert(data, ports, out):
    """Write the IB packets of capture @data to @out; returns (kept, skipped)."""
    frames = pcapng_frames(data) if data[:4] == b"\x0a\x0d\x0d\x0a" else pcap_frames(data)
    reasm = Reassembler()
    kept = skipped = 0
    for linktype, sec, frac, frame in frames:
        ip = ipv4_of(linktype, frame)
        if ip is None or len(ip) < 20 or ip[9] != IPPROTO_UDP:
            skipped += 1
            continue
        ip = reasm.add(ip)
        if ip is None:
            continue
        udp = ip[(ip[0] & 0x0F) * 4:]
        if len(udp) < 8:
            skipped += 1
            continue
        dport, ulen = struct.unpack(">HH", udp[2:6])
        packet = udp[8:ulen]
        if (ports and dport not in ports) or ulen < 8 or len(packet) != ulen - 8 or \
                16 + len(packet) > 0xFFFF:
            skipped += 1
            continue
        out.write(erf_record(sec, frac, packet))
        kept += 1
    return kept, skipped


def main():
    ap = argparse.ArgumentParser(
        description="Write the InfiniBand packets that umcast's simulated IB link "
        "carried in UDP datagrams (a pcap or pcapng capture) as an ERF file of "
        "type 21, which Wireshark/tshark decode as InfiniBand.")
    ap.add_argument("capture", help="pcap or pcapng file")
    ap.add_argument("erf", help="ERF file to write ('-': standard output)")
    ap.add_argument("-p", "--port", type=int, action="append",
                    help="UDP destination port of the IB packets (repeatable; "
                    "default 4796, umc-sm's data port; unicast packets go to "
                    "each port's own data endpoint)")
    ap.add_argument("-a", "--all-udp", action="store_true",
                    help="take every UDP datagram, whatever its port")
    args = ap.parse_args()
    ports = set() if args.all_udp else set(args.port or [4796])
    try:
        with open(args.capture, "rb") as f:
            data = f.read()
        out = sys.stdout.buffer if args.erf == "-" else open(args.erf, "wb")
        kept, skipped = convert(data, ports, out)
        out.flush()
    except (BadInput, struct.error, IndexError) as e:
        print("ib2erf: %s: %s" % (args.capture, e), file=sys.stderr)
        return 1
    except OSError as e:
        print("ib2erf: %s" % e, file=sys.stderr)
        return 1
    print("ib2erf: %d InfiniBand packets written, %d other frames skipped" % (kept, skipped),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
