// SPDX-License-Identifier: MIT
/*
 * roce_rx.c - the checks a received RoCEv2 UD datagram passes before any QP
 * sees it: the transport headers (umc_ud_decode), then the ICRC under the
 * datagram's IP/UDP context, with the IPv4 identification solved when the
 * ID the receiver assumed does not explain it (docs/design.md, "RoCEv2
 * fidelity").
 *
 * Pure: the link layer fills the context from the socket and counts what
 * this returns, and the fuzz target feeds it arbitrary bytes.
 */
#include <errno.h>

#include "umc_cc.h"
#include "wire/roce.h"
#include "wire/sg.h"

/*
 * The transport headers of @sg: in place when the bytes of its first piece
 * hold all that the opcode has (as they do when the rest landed in a
 * receive), else copied into @buf.  umc_ud_decode() reads no more than
 * that, after checking that the datagram's length covers it.
 */
static const uint8_t *ud_headers(const struct umc_sg *sg, uint8_t buf[UMC_UD_HDR_MAX])
{
	size_t first = sg->n > 0 ? sg->iov[0].iov_len : 0;
	const uint8_t *p = sg->n > 0 ? sg->iov[0].iov_base : NULL;

	if (first > sg->len)
		first = sg->len;
	if (first >= UMC_BTH_LEN && first >= umc_ud_hdr_len(p[0]))
		return p;
	umc_sg_read(sg, 0, buf, UMC_UD_HDR_MAX);
	return buf;
}

/**
 * umc_rocev2_rx_check_sg - decode and integrity-check one received UD
 * datagram that arrived in pieces (sg.h).
 * @ip:          its IP/UDP context as the receiver knows it; for IPv4,
 *               ip_id is the ID assumed (0, what umcast senders send) and is
 *               replaced by the solved ID when another one explains the ICRC
 * @sg:          the UDP payload (BTH through ICRC), sg->len bytes
 * @h:           the decoded transport headers
 * @payload_off: offset of the first payload byte in the datagram
 * @payload_len: payload bytes, pad excluded
 * @id_solved:   set to whether the IPv4 ID had to be solved
 * @memo:        the ICRC memo of the stream the datagram came in (the
 *               receiving endpoint's), or NULL (umc_icrc_start_memo())
 *
 * IBA Annex A17.3.3 (ICRC over the masked IP/UDP headers and the packet);
 * for IPv6 the check is the full 32 bits, for IPv4 with a solved ID the 16
 * bits left over (umc_icrc_solve_ipv4_id()).
 *
 * Context: any context; writes nothing but its outputs and @memo; reads
 * no byte past sg->len.
 * Returns: 0; -EBADMSG or -EPROTONOSUPPORT when umc_ud_decode() refuses the
 * datagram (malformed); -EILSEQ when the ICRC is wrong and no IPv4 ID
 * explains it.  @h and the offsets are set only when the decode succeeded.
 */
UMC_HOT
int umc_rocev2_rx_check_sg(struct umc_ip_ctx *ip, const struct umc_sg *sg,
			   struct umc_ud_hdr *h, size_t *payload_off, size_t *payload_len,
			   bool *id_solved, struct umc_icrc_memo *memo)
{
	uint8_t hdr[UMC_UD_HDR_MAX], icrc[UMC_ICRC_LEN];
	const uint8_t *hp = ud_headers(sg, hdr);
	size_t len = sg->len;
	uint32_t computed, received;
	uint16_t id;
	int ret;

	*id_solved = false;
	ret = umc_ud_decode(hp, len, h, payload_off, payload_len);
	if (ret)
		return ret;
	/* The prefix ends with the headers: see umc_icrc_compute() on why. */
	computed = memo ? umc_icrc_start_memo(memo, ip, len, hp, *payload_off)
			: umc_icrc_start(ip, len, hp, *payload_off);
	computed = umc_icrc_final(umc_sg_icrc(computed, sg, *payload_off,
					      len - *payload_off - UMC_ICRC_LEN));
	umc_sg_read(sg, len - UMC_ICRC_LEN, icrc, UMC_ICRC_LEN);
	received = umc_icrc_get(icrc);
	if (computed == received)
		return 0;
	if (ip->family != 4 || umc_icrc_solve_ipv4_id(ip, len, computed, received, &id))
		return -EILSEQ;
	ip->ip_id = id;
	*id_solved = true;
	return 0;
}

/**
 * umc_rocev2_rx_check - umc_rocev2_rx_check_sg() of a datagram in one piece.
 * @p, @len: the UDP payload (BTH through ICRC)
 *
 * The other parameters and the result are umc_rocev2_rx_check_sg()'s.
 * Context: pure, any context; reads at most @len bytes of @p.
 */
int umc_rocev2_rx_check(struct umc_ip_ctx *ip, const uint8_t *p, size_t len,
			struct umc_ud_hdr *h, size_t *payload_off, size_t *payload_len,
			bool *id_solved)
{
	struct iovec iov = {(void *)(uintptr_t)p, len};
	struct umc_sg sg = {&iov, 1, len};

	return umc_rocev2_rx_check_sg(ip, &sg, h, payload_off, payload_len, id_solved, NULL);
}
