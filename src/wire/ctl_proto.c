// SPDX-License-Identifier: MIT
/*
 * ctl_proto.c - encode and decode the run-time control messages
 * (ctl_proto.h has the protocol).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "wire/be.h"
#include "wire/ctl_proto.h"

static bool known_op(uint8_t op)
{
	switch (op & (uint8_t)~UMC_CTL_REPLY) {
	case UMC_CTL_FAULTS:
	case UMC_CTL_REREGISTER:
	case UMC_CTL_PORT_DOWN:
	case UMC_CTL_SM_FAILOVER:
	case UMC_CTL_SM_SILENT:
	case UMC_CTL_SM_REJECT:
		return true;
	}
	return false;
}

const char *umc_ctl_op_str(uint8_t op)
{
	switch (op & (uint8_t)~UMC_CTL_REPLY) {
	case UMC_CTL_FAULTS:
		return "faults";
	case UMC_CTL_REREGISTER:
		return "reregister";
	case UMC_CTL_PORT_DOWN:
		return "port-down";
	case UMC_CTL_SM_FAILOVER:
		return "failover";
	case UMC_CTL_SM_SILENT:
		return "silent";
	case UMC_CTL_SM_REJECT:
		return "reject";
	}
	return "?";
}

void umc_ctl_set_text(struct umc_ctl_msg *m, const char *s)
{
	size_t n = strnlen(s, UMC_CTL_TEXT_MAX);

	memcpy(m->text, s, n);
	m->text[n] = 0;
	m->len = (uint16_t)n;
}

size_t umc_ctl_encode(uint8_t *buf, const struct umc_ctl_msg *m)
{
	struct umc_ctl_wire_hdr *h = (struct umc_ctl_wire_hdr *)buf;
	uint16_t len = m->len < UMC_CTL_TEXT_MAX ? m->len : UMC_CTL_TEXT_MAX;

	memset(h, 0, sizeof(*h));
	put_be32(h->magic, UMC_CTL_MAGIC);
	h->version = UMC_CTL_VERSION;
	h->op = m->op;
	put_be32(h->status, (uint32_t)m->status);
	put_be32(h->arg, m->arg);
	put_be16(h->len, len);
	memcpy(buf + UMC_CTL_HDR_LEN, m->text, len);
	return UMC_CTL_HDR_LEN + (size_t)len;
}

int umc_ctl_decode(const uint8_t *buf, size_t len, struct umc_ctl_msg *m)
{
	const struct umc_ctl_wire_hdr *h = (const struct umc_ctl_wire_hdr *)buf;
	size_t tlen;

	memset(m, 0, offsetof(struct umc_ctl_msg, text) + 1);
	if (len < UMC_CTL_HDR_LEN || get_be32(h->magic) != UMC_CTL_MAGIC)
		return -EBADMSG;
	m->version = h->version;
	m->op = h->op;
	if (h->version != UMC_CTL_VERSION)
		return -EPROTONOSUPPORT;
	tlen = get_be16(h->len);
	if (!known_op(h->op) || get_be16(h->reserved0) || get_be16(h->reserved1) ||
	    tlen > UMC_CTL_TEXT_MAX || len != UMC_CTL_HDR_LEN + tlen ||
	    memchr(buf + UMC_CTL_HDR_LEN, 0, tlen))
		return -EBADMSG;
	m->status = (int32_t)get_be32(h->status);
	m->arg = get_be32(h->arg);
	m->len = (uint16_t)tlen;
	memcpy(m->text, buf + UMC_CTL_HDR_LEN, tlen);
	m->text[tlen] = 0;
	return 0;
}
