// SPDX-License-Identifier: MIT
/*
 * roce_ip.c - the IPv4/IPv6 and UDP headers of a RoCEv2 datagram, and the
 * 40-byte GRH a UD receive buffer starts with.
 *
 * umcast sends through UDP sockets, so the kernel writes these headers on
 * the wire.  They are built here for two readers: the ICRC, which covers
 * most of their fields (roce_icrc.c), and the receiver, which is shown the
 * IP header in front of the payload as rxe shows it
 * (rxe_net.c prepare4(), prepare6(), prepare_udp_hdr(); rxe_resp.c copies
 * the network header in front of the payload).  What of
 * them a receiving socket shows, its message's name and control messages,
 * is read back into the same context (umc_ip_ctx_from_msg).
 *
 * A context whose family is 6 is IPv6; any other family is taken as IPv4.
 * Length fields are 16 bits wide: callers keep datagrams below 64 KiB.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "umc_cc.h"
#include "umc_param.h"
#include "wire/be.h"
#include "wire/roce.h"

enum {
	IPV4_VER_IHL = 0x45, /* version 4, 5 words, no options */
	IPV4_DF = 0x4000,
	IPPROTO_UDP_NUM = 17,
	IPV6_VERSION = 6,
	IPV6_FLOW_MASK = 0xfffff,
};

/*
 * RFC 1071 checksum of an IPv4 header whose checksum field is zero.  The
 * ones' complement sum is taken over 32-bit words and then folded, which
 * gives the sum of the 16-bit words (RFC 1071 section 2 (C), parallel
 * summation, and (D), deferred carries): five loads where sixteen-bit
 * steps take ten.
 */
static uint16_t ipv4_hdr_csum(const uint8_t *h)
{
	uint64_t sum = 0;

	for (int i = 0; i < UMC_IPV4_HLEN; i += 4)
		sum += get_be32(h + i);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum += sum >> 16;
	return (uint16_t)~sum;
}

static size_t ipv4_hdr_encode(uint8_t *out, const struct umc_ip_ctx *c, size_t udp_len)
{
	out[0] = IPV4_VER_IHL;
	out[1] = c->tclass;
	put_be16(out + 2, (uint32_t)(UMC_IPV4_HLEN + UMC_UDP_HLEN + udp_len));
	put_be16(out + 4, c->ip_id);
	put_be16(out + 6, c->df ? IPV4_DF : 0);
	out[8] = c->hop_limit;
	out[9] = IPPROTO_UDP_NUM;
	out[10] = 0;
	out[11] = 0;
	memcpy(out + 12, c->src, 4);
	memcpy(out + 16, c->dst, 4);
	put_be16(out + 10, ipv4_hdr_csum(out));
	return UMC_IPV4_HLEN;
}

static size_t ipv6_hdr_encode(uint8_t *out, const struct umc_ip_ctx *c, size_t udp_len)
{
	uint32_t flow = c->flow_label & IPV6_FLOW_MASK;

	out[0] = (uint8_t)(IPV6_VERSION << 4 | c->tclass >> 4);
	out[1] = (uint8_t)((uint32_t)c->tclass << 4 | flow >> 16);
	put_be16(out + 2, flow);
	put_be16(out + 4, (uint32_t)(UMC_UDP_HLEN + udp_len));
	out[6] = IPPROTO_UDP_NUM;
	out[7] = c->hop_limit;
	memcpy(out + 8, c->src, 16);
	memcpy(out + 24, c->dst, 16);
	return UMC_IPV6_HLEN;
}

/**
 * umc_ip_hdr_encode - write the IP header of a RoCEv2 datagram.
 * @out:     UMC_IPV4_HLEN or UMC_IPV6_HLEN bytes
 * @c:       addresses and header values; family 6 selects IPv6
 * @udp_len: UDP payload length, BTH through ICRC
 *
 * IPv4 (RFC 791, as rxe's prepare4 builds it): version 4, IHL 5, TOS
 * @c->tclass, total length 20 + 8 + @udp_len, identification @c->ip_id, DF if
 * @c->df, fragment offset 0, TTL @c->hop_limit, protocol 17, a valid header
 * checksum.  IPv6 (RFC 8200): traffic class, 20-bit flow label, payload
 * length 8 + @udp_len, next header 17, hop limit.  rxe_net.c prepare4(),
 * prepare6().
 *
 * Context: pure, any context.
 * Returns: bytes written, 20 or 40.
 */
size_t umc_ip_hdr_encode(uint8_t *out, const struct umc_ip_ctx *c, size_t udp_len)
{
	if (c->family == 6)
		return ipv6_hdr_encode(out, c, udp_len);
	return ipv4_hdr_encode(out, c, udp_len);
}

/**
 * umc_udp_hdr_encode - write the 8-byte UDP header of a RoCEv2 datagram.
 * @out:     8 bytes
 * @c:       source and destination ports
 * @udp_len: UDP payload length, BTH through ICRC
 * @csum:    checksum field as sent (rxe sends 0; the ICRC masks it)
 *
 * Context: pure, any context.  rxe_net.c prepare_udp_hdr().
 */
void umc_udp_hdr_encode(uint8_t out[UMC_UDP_HLEN], const struct umc_ip_ctx *c, size_t udp_len,
			uint16_t csum)
{
	put_be16(out, c->sport);
	put_be16(out + 2, c->dport);
	put_be16(out + 4, (uint32_t)(UMC_UDP_HLEN + udp_len));
	put_be16(out + 6, csum);
}

/**
 * umc_grh_synth - the 40 bytes in front of a UD receive buffer.
 * @out:     40 bytes (UMC_GRH_LEN)
 * @c:       the received datagram's IP context
 * @udp_len: UDP payload length as received, BTH through ICRC
 *
 * rxe copies the received network header in front of the payload: for
 * IPv4, 20 zero bytes then the 20-byte IPv4 header; for IPv6, the IPv6
 * header (union rdma_network_hdr, include/rdma/ib_verbs.h).  The IPv4
 * header carries a valid checksum, which libibverbs' ibv_init_ah_from_wc()
 * may check to recognise it.
 *
 * Context: pure, any context.
 */
UMC_HOT
void umc_grh_synth(uint8_t out[40], const struct umc_ip_ctx *c, size_t udp_len)
{
	if (c->family == 6) {
		ipv6_hdr_encode(out, c, udp_len);
		return;
	}
	memset(out, 0, UMC_IPV6_HLEN - UMC_IPV4_HLEN);
	ipv4_hdr_encode(out + UMC_IPV6_HLEN - UMC_IPV4_HLEN, c, udp_len);
}

UMC_HOT
unsigned umc_ip_ctx_from_msg(struct msghdr *mh, struct umc_ip_ctx *ip, uint32_t *sk_drops)
{
	const struct sockaddr_storage *from = mh->msg_name;
	unsigned ifindex = 0;

	ip->dport = UMC_ROCEV2_UDP_PORT;
	if (from->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)from;

		ip->family = 4;
		ip->df = true;
		memcpy(ip->src, &s->sin_addr, 4);
		ip->sport = ntohs(s->sin_port);
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)from;

		ip->family = 6;
		memcpy(ip->src, &s->sin6_addr, 16);
		ip->sport = ntohs(s->sin6_port);
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		const void *d = CMSG_DATA(c);
		int v;

		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			const struct in_pktinfo *pi = d;

			memcpy(ip->dst, &pi->ipi_addr, 4);
			ifindex = (unsigned)pi->ipi_ifindex;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			memcpy(&v, d, sizeof(v));
			ip->hop_limit = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			ip->tclass = *(const uint8_t *)d;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			const struct in6_pktinfo *pi = d;

			memcpy(ip->dst, &pi->ipi6_addr, 16);
			ifindex = pi->ipi6_ifindex;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) {
			memcpy(&v, d, sizeof(v));
			ip->hop_limit = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			memcpy(&v, d, sizeof(v));
			ip->tclass = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_FLOWINFO) {
			uint32_t fi;

			memcpy(&fi, d, sizeof(fi));
			ip->flow_label = ntohl(fi) & 0xfffff;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL && sk_drops &&
			   c->cmsg_len >= CMSG_LEN(sizeof(*sk_drops))) {
			memcpy(sk_drops, d, sizeof(*sk_drops));
		}
	}
	return ifindex;
}
