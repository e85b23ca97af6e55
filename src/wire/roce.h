/* SPDX-License-Identifier: MIT */
/*
 * roce.h - the RoCEv2 part of a UD packet: the IP/UDP context, the RoCEv2
 * ICRC and the 40-byte GRH area rxe shows a receiver (IBA Vol 1 Annex A17;
 * docs/design.md, "RoCEv2 fidelity").  Pure codecs: no I/O, no global
 * state, so every function is tested against tests/data/rocev2_vectors.txt.
 *
 * Packet:
 *
 *   IPv4 (20) | UDP (8, dport 4791) | BTH (12) | DETH (8) | [ImmDt (4)] |
 *   payload | pad (0-3, zero) | ICRC (4, least significant byte first)
 *
 * "UDP payload" below always means BTH through ICRC inclusive, and every
 * @udp_len parameter is that length (the UDP header's 8 bytes excluded).
 */
#ifndef UMC_WIRE_ROCE_H
#define UMC_WIRE_ROCE_H

#include "wire/crc.h"
#include "wire/transport.h"

enum {
	UMC_IPV4_HLEN = 20,
	UMC_IPV6_HLEN = 40,
	UMC_UDP_HLEN = 8,
};

/*
 * The IP and UDP context of a packet: what the ICRC pseudo-header covers
 * and what the receive GRH shows.  Addresses are in network order; an IPv4
 * address sits in the first 4 bytes of src/dst.
 */
struct umc_ip_ctx {
	uint8_t family; /* 4 or 6 */
	uint8_t src[16];
	uint8_t dst[16];
	uint16_t sport, dport;
	uint16_t ip_id;	    /* IPv4 identification (0 from umcast senders) */
	bool df;	    /* IPv4 don't-fragment */
	uint8_t tclass;	    /* IPv4 TOS / IPv6 traffic class */
	uint8_t hop_limit;  /* IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label; /* IPv6, 20 bits */
};

/**
 * umc_roce_sport - UDP source port of a QP, as rxe chooses it:
 * 0xC000 + (hash_32(qpn, 14) & 0x3fff), hash_32(v, 14) = (v * 0x61C88647) >> 18.
 */
static inline uint16_t umc_roce_sport(uint32_t qpn)
{
	return (uint16_t)(0xC000u + ((((uint32_t)(qpn * 0x61C88647u)) >> 18) & 0x3fffu));
}

/**
 * umc_ip_hdr_encode - write the IPv4 (20 bytes, valid checksum, protocol
 * UDP) or IPv6 (40 bytes, next header UDP) header of a datagram whose UDP
 * payload is @udp_len bytes (total length = header + 8 + @udp_len).
 *
 * Returns: bytes written, 20 or 40.
 */
size_t umc_ip_hdr_encode(uint8_t *out, const struct umc_ip_ctx *c, size_t udp_len);

/** umc_udp_hdr_encode - write the 8-byte UDP header (length 8 + @udp_len) with checksum @csum. */
void umc_udp_hdr_encode(uint8_t out[UMC_UDP_HLEN], const struct umc_ip_ctx *c, size_t udp_len,
			uint16_t csum);

/**
 * umc_icrc_start - CRC register after the ICRC's fixed prefix and the
 * transport headers: 8 bytes of 0xFF (the absent LRH), the masked IP
 * header, the masked UDP header, then @hdr_len bytes of transport headers
 * from the BTH on, BTH byte 4 masked (IBA A17.3.3; rxe_icrc.c
 * rxe_icrc_hdr()), fed in one CRC call.
 * @c:       the datagram's IP/UDP context
 * @udp_len: UDP payload length, BTH through ICRC
 * @hdr:     the transport headers as sent (BTH, DETH, ImmDt)
 * @hdr_len: UMC_BTH_LEN to UMC_UD_HDR_MAX bytes of them (more are ignored)
 *
 * Continue with umc_icrc_update() over what follows (payload and pad),
 * then umc_icrc_final().
 */
uint32_t umc_icrc_start(const struct umc_ip_ctx *c, size_t udp_len, const uint8_t *hdr,
			size_t hdr_len);

/*
 * struct umc_icrc_memo - the ICRC prefix of a stream's last packet, kept
 * by the caller for umc_icrc_start_memo(): what umc_icrc_start() was given,
 * the PSN as zeros (@hdr), and the register it returned (@reg).  A zeroed
 * memo holds nothing.
 */
struct umc_icrc_memo {
	uint8_t src[16], dst[16];
	uint8_t hdr[UMC_UD_HDR_MAX];
	uint32_t udp_len;
	uint16_t sport, dport, ip_id;
	uint8_t family, hdr_len;
	bool df;
	uint32_t reg;
};

/**
 * umc_icrc_start_memo - umc_icrc_start() of a packet of a stream.
 * @m: the stream's memo (read, and rewritten when the packet's prefix
 *     differs from the last one in more than its PSN)
 *
 * The other parameters and the result are umc_icrc_start()'s, bit for bit.
 * Consecutive packets of a QP to one destination differ in the ICRC's
 * prefix only in their PSN (BTH bytes 9-11).  The CRC is affine over GF(2)
 * in its input, so such a packet's register is the memo's plus the CRC,
 * from a zero register without inversion, of its PSN and the header bytes
 * after it as zeros: six table lookups (icrc_psn_table.py) instead of
 * building the prefix and a CRC call over it.  Header lengths other than a
 * UD SEND's (20 or 24 bytes) are not remembered.
 *
 * Context: any context; writes nothing but @m, which the caller serializes.
 */
uint32_t umc_icrc_start_memo(struct umc_icrc_memo *m, const struct umc_ip_ctx *c, size_t udp_len,
			     const uint8_t *hdr, size_t hdr_len);

/**
 * umc_icrc_compute - the ICRC of a whole UDP payload @p of @len bytes (BTH
 * through ICRC; the last 4 bytes are not read).
 *
 * Returns: the ICRC value; umc_icrc_put() writes it in wire order.  A @len
 * below UMC_BTH_LEN + UMC_ICRC_LEN reads nothing and returns 0.
 */
uint32_t umc_icrc_compute(const struct umc_ip_ctx *c, const uint8_t *p, size_t len);

/**
 * umc_icrc_solve_ipv4_id - find the IPv4 identification a sender used.
 * @c:        context of the received datagram, with ip_id as assumed when
 *            @computed was calculated
 * @udp_len:  UDP payload length (BTH through ICRC)
 * @computed: ICRC computed with c->ip_id
 * @received: ICRC found in the packet
 * @id:       the identification that makes both agree
 *
 * A UDP socket never sees the IPv4 ID, which the ICRC covers.  The ICRC is
 * affine in the 16 ID bits, so the ID is found by solving a 32x16 linear
 * system over GF(2); the 16 remaining equations are the integrity check.
 *
 * Returns: 0 and *@id, or -EBADMSG if no ID explains the difference.
 */
int umc_icrc_solve_ipv4_id(const struct umc_ip_ctx *c, size_t udp_len, uint32_t computed,
			   uint32_t received, uint16_t *id);

struct msghdr;

/* The IPv6 flow label's socket option and control message (linux/in6.h; glibc lacks it). */
#ifndef IPV6_FLOWINFO
#define IPV6_FLOWINFO 11
#endif

/**
 * umc_ip_ctx_from_msg - the IP context of a datagram as a UDP socket shows
 * it (recvmsg(2)): family, source address and port from the message's
 * name (a struct sockaddr_in or _in6), DF for IPv4, destination port 4791,
 * and from its control messages (ip(7), ipv6(7)) the TTL or hop limit, the
 * TOS or traffic class, the flow label, and with IP_PKTINFO/IPV6_PKTINFO
 * the destination address.  @ip is zeroed by the caller, who fills what
 * the socket did not say (the destination of a bound socket).  With
 * SO_RXQ_OVFL (socket(7)) a message may carry the socket's count of
 * datagrams dropped so far; *@sk_drops gets it then, and is left as it was
 * otherwise (the kernel sends none while the count is 0).  @sk_drops may
 * be NULL.
 *
 * Context: pure.
 * Returns: the arrival interface a PKTINFO message gave, or 0.
 */
unsigned umc_ip_ctx_from_msg(struct msghdr *mh, struct umc_ip_ctx *ip, uint32_t *sk_drops);

/**
 * umc_grh_synth - the 40 bytes rxe writes in front of a UD receive buffer:
 * for IPv4, 20 zero bytes then the IPv4 header (valid checksum); for IPv6,
 * the IPv6 header (union rdma_network_hdr, include/rdma/ib_verbs.h).
 * @udp_len: UDP payload length as received (BTH through ICRC)
 */
void umc_grh_synth(uint8_t out[40], const struct umc_ip_ctx *c, size_t udp_len);

/**
 * umc_rocev2_rx_check - decode a received UD datagram and check its ICRC
 * under @ip, solving the IPv4 ID when the assumed one does not fit
 * (roce_rx.c).
 *
 * Returns: 0 (*@id_solved says whether ip->ip_id was replaced); -EBADMSG or
 * -EPROTONOSUPPORT for a malformed datagram (umc_ud_decode()); -EILSEQ for
 * a wrong ICRC.
 */
int umc_rocev2_rx_check(struct umc_ip_ctx *ip, const uint8_t *p, size_t len,
			struct umc_ud_hdr *h, size_t *payload_off, size_t *payload_len,
			bool *id_solved);

struct umc_sg;

/**
 * umc_rocev2_rx_check_sg - umc_rocev2_rx_check() of a datagram that arrived
 * in pieces (wire/sg.h): the same checks and results (roce_rx.c).  @memo:
 * the receiving endpoint's umc_icrc_start_memo() memo, or NULL.
 */
int umc_rocev2_rx_check_sg(struct umc_ip_ctx *ip, const struct umc_sg *sg,
			   struct umc_ud_hdr *h, size_t *payload_off, size_t *payload_len,
			   bool *id_solved, struct umc_icrc_memo *memo);

#endif /* UMC_WIRE_ROCE_H */
