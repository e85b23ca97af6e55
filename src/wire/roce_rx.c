// SPDX-License-Identifier: MIT
/*
 * roce_rx.c - the checks a received RoCEv2 UD datagram passes before any QP
 * sees it: the transport headers (umc_ud_decode), then the ICRC under the
 * datagram's IP/UDP context, with the IPv4 identification solved when the
 * ID the receiver assumed does not explain it (rocev2-wire.md section 8).
 *
 * Pure: the link layer fills the context from the socket and counts what
 * this returns, and the fuzz target feeds it arbitrary bytes.
 */
#include <errno.h>

#include "wire/roce.h"

/**
 * umc_rocev2_rx_check - decode and integrity-check one received UD datagram.
 * @ip:          its IP/UDP context as the receiver knows it; for IPv4,
 *               ip_id is the ID assumed (0, what umcast senders send) and is
 *               replaced by the solved ID when another one explains the ICRC
 * @p, @len:     the UDP payload (BTH through ICRC)
 * @h:           the decoded transport headers
 * @payload_off: offset of the first payload byte in @p
 * @payload_len: payload bytes, pad excluded
 * @id_solved:   set to whether the IPv4 ID had to be solved
 *
 * IBA Annex A17.3.3 (ICRC over the masked IP/UDP headers and the packet);
 * for IPv6 the check is the full 32 bits, for IPv4 with a solved ID the 16
 * bits left over (umc_icrc_solve_ipv4_id()).
 *
 * Context: pure, any context; reads at most @len bytes of @p.
 * Returns: 0; -EBADMSG or -EPROTONOSUPPORT when umc_ud_decode() refuses the
 * datagram (malformed); -EILSEQ when the ICRC is wrong and no IPv4 ID
 * explains it.  @h and the offsets are set only when the decode succeeded.
 */
int umc_rocev2_rx_check(struct umc_ip_ctx *ip, const uint8_t *p, size_t len,
			struct umc_ud_hdr *h, size_t *payload_off, size_t *payload_len,
			bool *id_solved)
{
	uint32_t computed, received;
	uint16_t id;
	int ret;

	*id_solved = false;
	ret = umc_ud_decode(p, len, h, payload_off, payload_len);
	if (ret)
		return ret;
	computed = umc_icrc_compute(ip, p, len);
	received = umc_icrc_get(p + len - UMC_ICRC_LEN);
	if (computed == received)
		return 0;
	if (ip->family != 4 || umc_icrc_solve_ipv4_id(ip, len, computed, received, &id))
		return -EILSEQ;
	ip->ip_id = id;
	*id_solved = true;
	return 0;
}
