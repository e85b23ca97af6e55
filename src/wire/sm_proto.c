// SPDX-License-Identifier: MIT
/*
 * sm_proto.c - encode and decode the library <-> umc-sm messages
 * (sm_proto.h has the protocol).
 */
#include <errno.h>
#include <string.h>

#include "umc_param.h"
#include "wire/be.h"
#include "wire/ib.h"
#include "wire/ib_mad.h"
#include "wire/sm_proto.h"

enum { MAD_LEN = 256 };

/* Body length of each type: requests, and replies with status OK. */
static int body_len(uint8_t type)
{
	switch (type) {
	case UMC_SM_REGISTER:
		return sizeof(struct umc_sm_wire_register);
	case UMC_SM_RENEW:
	case UMC_SM_UNREGISTER:
	case UMC_SM_UNREGISTER_REPLY:
		return 0;
	case UMC_SM_SA:
	case UMC_SM_SA_REPLY:
		return MAD_LEN;
	case UMC_SM_RESOLVE:
		return sizeof(struct umc_sm_wire_resolve);
	case UMC_SM_REGISTER_REPLY:
		return sizeof(struct umc_sm_wire_port_info);
	case UMC_SM_RENEW_REPLY:
		return sizeof(struct umc_sm_wire_renew_reply);
	case UMC_SM_RESOLVE_REPLY:
		return sizeof(struct umc_sm_wire_resolve_reply);
	case UMC_SM_SUBSCRIBE:
	case UMC_SM_UNSUBSCRIBE:
	case UMC_SM_SQUATTED:
		return sizeof(struct umc_sm_wire_mlid);
	case UMC_SM_FWD_ACK:
		return sizeof(struct umc_sm_wire_fwd_ack);
	case UMC_SM_UNSUBSCRIBE_REPLY:
	case UMC_SM_SQUATTED_REPLY:
		return 0;
	case UMC_SM_FORWARD:
		return UMC_SM_FWD_HDR_LEN; /* and its entries (fwd_len) */
	}
	return -1;
}

/* A FORWARD's body length for @count entries. */
static size_t fwd_len(unsigned count)
{
	return UMC_SM_FWD_HDR_LEN + (size_t)count * UMC_SM_FWD_ENTRY_LEN;
}

static int expected_len(const struct umc_sm_hdr *h)
{
	if ((h->type & UMC_SM_TYPE_REPLY) && h->status != UMC_SM_OK)
		return 0;
	return body_len(h->type);
}

static void decode_port_info(const struct umc_sm_wire_port_info *w, struct umc_sm_port_info *pi)
{
	int i;

	pi->port_guid = get_be64(w->port_guid);
	pi->subnet_prefix = get_be64(w->subnet_prefix);
	pi->lid = (uint16_t)get_be16(w->lid);
	pi->sm_lid = (uint16_t)get_be16(w->sm_lid);
	pi->sm_sl = w->sm_sl;
	pi->active_mtu = w->active_mtu;
	pi->max_mtu = w->max_mtu;
	pi->active_width = w->active_width;
	pi->active_speed = w->active_speed;
	pi->rate = w->rate;
	pi->pkey_count = w->pkey_count;
	for (i = 0; i < UMC_SM_PKEY_TABLE_MAX; i++)
		pi->pkeys[i] = (uint16_t)get_be16(w->pkeys[i]);
	pi->lease_ms = get_be32(w->lease_ms);
	pi->mcast_base = get_be32(w->mcast_base);
	pi->mlid_base = (uint16_t)get_be16(w->mlid_base);
	pi->mlid_max = (uint16_t)get_be16(w->mlid_max);
	pi->data_port = (uint16_t)get_be16(w->data_port);
	pi->sm_flags = (uint16_t)get_be16(w->sm_flags);
}

static void encode_port_info(struct umc_sm_wire_port_info *w, const struct umc_sm_port_info *pi)
{
	int i;

	memset(w, 0, sizeof(*w));
	put_be64(w->port_guid, pi->port_guid);
	put_be64(w->subnet_prefix, pi->subnet_prefix);
	put_be16(w->lid, pi->lid);
	put_be16(w->sm_lid, pi->sm_lid);
	w->sm_sl = pi->sm_sl;
	w->active_mtu = pi->active_mtu;
	w->max_mtu = pi->max_mtu;
	w->active_width = pi->active_width;
	w->active_speed = pi->active_speed;
	w->rate = pi->rate;
	w->pkey_count = pi->pkey_count;
	for (i = 0; i < UMC_SM_PKEY_TABLE_MAX && i < pi->pkey_count; i++)
		put_be16(w->pkeys[i], pi->pkeys[i]);
	put_be32(w->lease_ms, pi->lease_ms);
	put_be32(w->mcast_base, pi->mcast_base);
	put_be16(w->mlid_base, pi->mlid_base);
	put_be16(w->mlid_max, pi->mlid_max);
	put_be16(w->data_port, pi->data_port);
	put_be16(w->sm_flags, pi->sm_flags);
}

static void decode_body(const uint8_t *b, struct umc_sm_msg *m)
{
	const struct umc_sm_wire_register *reg = (const void *)b;
	const struct umc_sm_wire_resolve_reply *rr = (const void *)b;
	const struct umc_sm_wire_fwd *fw = (const void *)b;
	const struct umc_sm_wire_fwd_ack *ack = (const void *)b;

	switch (m->hdr.type) {
	case UMC_SM_REGISTER:
		m->reg.data_addr = get_be32(reg->data_addr);
		m->reg.data_port = (uint16_t)get_be16(reg->data_port);
		m->reg.port_guid = get_be64(reg->port_guid);
		m->reg.nonce = get_be64(reg->nonce);
		break;
	case UMC_SM_REGISTER_REPLY:
		decode_port_info((const void *)b, &m->port);
		break;
	case UMC_SM_RENEW_REPLY:
		m->lease_ms = get_be32(((const struct umc_sm_wire_renew_reply *)(const void *)b)->lease_ms);
		break;
	case UMC_SM_RESOLVE:
		m->resolve_lid = (uint16_t)get_be16(((const struct umc_sm_wire_resolve *)(const void *)b)->lid);
		break;
	case UMC_SM_RESOLVE_REPLY:
		m->resolved.lid = (uint16_t)get_be16(rr->lid);
		m->resolved.data_addr = get_be32(rr->data_addr);
		m->resolved.data_port = (uint16_t)get_be16(rr->data_port);
		m->resolved.port_guid = get_be64(rr->port_guid);
		break;
	case UMC_SM_SA:
	case UMC_SM_SA_REPLY:
		m->mad = b;
		break;
	case UMC_SM_SUBSCRIBE:
	case UMC_SM_UNSUBSCRIBE:
	case UMC_SM_SQUATTED:
		m->mlid = (uint16_t)get_be16(((const struct umc_sm_wire_mlid *)(const void *)b)->mlid);
		break;
	case UMC_SM_FWD_ACK:
		m->ack.mlid = (uint16_t)get_be16(ack->mlid);
		m->ack.version = get_be32(ack->version);
		break;
	case UMC_SM_FORWARD:
		m->fwd.mlid = (uint16_t)get_be16(fw->mlid);
		m->fwd.kind = fw->kind;
		m->fwd.version = get_be32(fw->version);
		m->fwd.total = (uint16_t)get_be16(fw->total);
		m->fwd.offset = (uint16_t)get_be16(fw->offset);
		m->fwd.count = (uint16_t)get_be16(fw->count);
		m->fwd.entries = b + UMC_SM_FWD_HDR_LEN;
		break;
	}
}

static bool is_mlid(uint16_t lid)
{
	return lid >= UMC_MLID_FIRST && lid < UMC_LID_PERMISSIVE;
}

/*
 * A FORWARD segment the receiver can place without further checks: a
 * multicast LID, a known kind, a version, one entry for a MULTICAST one,
 * and the segment of its list that its offset names, whole: the receiver
 * fills entries [offset, offset + count) of a list of total.
 */
static bool fwd_valid(const struct umc_sm_fwd *f)
{
	unsigned want;

	if (!is_mlid(f->mlid) || !f->version)
		return false;
	if (f->kind == UMC_SM_FWD_MULTICAST && f->total != 1)
		return false;
	if (f->kind != UMC_SM_FWD_MULTICAST && f->kind != UMC_SM_FWD_UNICAST)
		return false;
	if (f->offset % UMC_SM_FWD_SEG || (f->total && f->offset >= f->total) ||
	    (!f->total && f->offset))
		return false;
	want = f->total - f->offset < UMC_SM_FWD_SEG ? f->total - f->offset : UMC_SM_FWD_SEG;
	return f->count == want;
}

/*
 * The values of a REGISTER reply that the port takes as they are: the
 * P_Key table's length (the port's table is indexed by it), the MTU codes
 * (a shift count for the longest message, ibv_query_port's enum ibv_mtu),
 * the lease (a third of it is the renewal period: a tiny one would renew
 * without pause and lose the port every few milliseconds) and the MLID map
 * (multicast LIDs, IBA 4.1.2).  umc-sm sends nothing else.
 */
static bool port_info_valid(const struct umc_sm_port_info *pi)
{
	return pi->pkey_count >= 1 && pi->pkey_count <= UMC_SM_PKEY_TABLE_MAX &&
	       umc_sa_mtu_valid(pi->active_mtu) && umc_sa_mtu_valid(pi->max_mtu) &&
	       pi->active_mtu <= pi->max_mtu && pi->lease_ms >= UMC_SM_LEASE_MIN_MS &&
	       pi->lease_ms <= UMC_SM_LEASE_MAX_MS && pi->mlid_base >= UMC_MLID_FIRST &&
	       pi->mlid_base <= pi->mlid_max && pi->mlid_max < UMC_LID_PERMISSIVE;
}

int umc_sm_msg_decode(const uint8_t *p, size_t len, struct umc_sm_msg *m)
{
	const struct umc_sm_wire_hdr *w = (const void *)p;
	int want;

	memset(m, 0, sizeof(*m));
	if (len < UMC_SM_HDR_LEN || get_be32(w->magic) != UMC_SM_MAGIC)
		return -EBADMSG;
	m->hdr.version = w->version;
	m->hdr.type = w->type;
	m->hdr.status = (uint16_t)get_be16(w->status);
	m->hdr.epoch = get_be64(w->epoch);
	m->hdr.lid = (uint16_t)get_be16(w->lid);
	m->hdr.tid = get_be32(w->tid);
	if (w->version != UMC_SM_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	want = expected_len(&m->hdr);
	if (want < 0 || len - UMC_SM_HDR_LEN < (size_t)want)
		return -EBADMSG;
	if (m->hdr.type == UMC_SM_FORWARD && want) {
		/* Its length follows its count, read only once the fixed part is there. */
		const struct umc_sm_wire_fwd *fw = (const void *)(p + UMC_SM_HDR_LEN);
		unsigned count = get_be16(fw->count);

		if (count > UMC_SM_FWD_SEG)
			return -EBADMSG;
		want = (int)fwd_len(count);
	}
	if (len - UMC_SM_HDR_LEN != (size_t)want)
		return -EBADMSG;
	if (!want)
		return 0;
	decode_body(p + UMC_SM_HDR_LEN, m);
	switch (m->hdr.type) {
	case UMC_SM_REGISTER_REPLY:
		return port_info_valid(&m->port) ? 0 : -EBADMSG;
	case UMC_SM_FORWARD:
		return fwd_valid(&m->fwd) ? 0 : -EBADMSG;
	case UMC_SM_SUBSCRIBE:
	case UMC_SM_UNSUBSCRIBE:
	case UMC_SM_SQUATTED:
		return is_mlid(m->mlid) ? 0 : -EBADMSG;
	case UMC_SM_FWD_ACK:
		return is_mlid(m->ack.mlid) ? 0 : -EBADMSG;
	}
	return 0;
}

void umc_sm_fwd_entry_get(const struct umc_sm_fwd *f, unsigned i, struct umc_sm_fwd_entry *e)
{
	const uint8_t *r = f->entries + (size_t)i * UMC_SM_FWD_ENTRY_LEN;

	e->addr = get_be32(r);
	e->port = (uint16_t)get_be16(r + 4);
	e->lid = (uint16_t)get_be16(r + 6);
}

void umc_sm_fwd_entry_put(uint8_t *raw, const struct umc_sm_fwd_entry *e)
{
	put_be32(raw, e->addr);
	put_be16(raw + 4, e->port);
	put_be16(raw + 6, e->lid);
}

size_t umc_sm_msg_encode(uint8_t *out, const struct umc_sm_msg *m)
{
	struct umc_sm_wire_hdr *w = (void *)out;
	uint8_t *b = out + UMC_SM_HDR_LEN;
	struct umc_sm_wire_register *reg = (void *)b;
	struct umc_sm_wire_resolve_reply *rr = (void *)b;
	struct umc_sm_wire_fwd *fw = (void *)b;
	struct umc_sm_wire_fwd_ack *ack = (void *)b;
	int n = expected_len(&m->hdr);

	if (n < 0)
		return 0;
	if (m->hdr.type == UMC_SM_FORWARD && n) {
		if (m->fwd.count > UMC_SM_FWD_SEG)
			return 0;
		n = (int)fwd_len(m->fwd.count);
	}
	memset(out, 0, UMC_SM_HDR_LEN + (size_t)n);
	put_be32(w->magic, UMC_SM_MAGIC);
	w->version = UMC_SM_PROTO_VERSION;
	w->type = m->hdr.type;
	put_be16(w->status, m->hdr.status);
	put_be64(w->epoch, m->hdr.epoch);
	put_be16(w->lid, m->hdr.lid);
	put_be32(w->tid, m->hdr.tid);
	if (!n)
		return UMC_SM_HDR_LEN;
	switch (m->hdr.type) {
	case UMC_SM_REGISTER:
		put_be32(reg->data_addr, m->reg.data_addr);
		put_be16(reg->data_port, m->reg.data_port);
		put_be64(reg->port_guid, m->reg.port_guid);
		put_be64(reg->nonce, m->reg.nonce);
		break;
	case UMC_SM_REGISTER_REPLY:
		encode_port_info((void *)b, &m->port);
		break;
	case UMC_SM_RENEW_REPLY:
		put_be32(((struct umc_sm_wire_renew_reply *)(void *)b)->lease_ms, m->lease_ms);
		break;
	case UMC_SM_RESOLVE:
		put_be16(((struct umc_sm_wire_resolve *)(void *)b)->lid, m->resolve_lid);
		break;
	case UMC_SM_RESOLVE_REPLY:
		put_be16(rr->lid, m->resolved.lid);
		put_be32(rr->data_addr, m->resolved.data_addr);
		put_be16(rr->data_port, m->resolved.data_port);
		put_be64(rr->port_guid, m->resolved.port_guid);
		break;
	case UMC_SM_SA:
	case UMC_SM_SA_REPLY:
		memcpy(b, m->mad, MAD_LEN);
		break;
	case UMC_SM_SUBSCRIBE:
	case UMC_SM_UNSUBSCRIBE:
	case UMC_SM_SQUATTED:
		put_be16(((struct umc_sm_wire_mlid *)(void *)b)->mlid, m->mlid);
		break;
	case UMC_SM_FWD_ACK:
		put_be16(ack->mlid, m->ack.mlid);
		put_be32(ack->version, m->ack.version);
		break;
	case UMC_SM_FORWARD:
		put_be16(fw->mlid, m->fwd.mlid);
		fw->kind = m->fwd.kind;
		put_be32(fw->version, m->fwd.version);
		put_be16(fw->total, m->fwd.total);
		put_be16(fw->offset, m->fwd.offset);
		put_be16(fw->count, m->fwd.count);
		if (m->fwd.count)
			memcpy(b + UMC_SM_FWD_HDR_LEN, m->fwd.entries,
			       (size_t)m->fwd.count * UMC_SM_FWD_ENTRY_LEN);
		break;
	}
	return UMC_SM_HDR_LEN + (size_t)n;
}

const char *umc_sm_type_str(uint8_t type)
{
	switch (type) {
	case UMC_SM_REGISTER:
		return "REGISTER";
	case UMC_SM_RENEW:
		return "RENEW";
	case UMC_SM_UNREGISTER:
		return "UNREGISTER";
	case UMC_SM_SA:
		return "SA";
	case UMC_SM_RESOLVE:
		return "RESOLVE";
	case UMC_SM_REGISTER_REPLY:
		return "REGISTER reply";
	case UMC_SM_RENEW_REPLY:
		return "RENEW reply";
	case UMC_SM_UNREGISTER_REPLY:
		return "UNREGISTER reply";
	case UMC_SM_SA_REPLY:
		return "SA reply";
	case UMC_SM_RESOLVE_REPLY:
		return "RESOLVE reply";
	case UMC_SM_SUBSCRIBE:
		return "SUBSCRIBE";
	case UMC_SM_FWD_ACK:
		return "FWD_ACK";
	case UMC_SM_UNSUBSCRIBE:
		return "UNSUBSCRIBE";
	case UMC_SM_SQUATTED:
		return "SQUATTED";
	case UMC_SM_FORWARD:
		return "FORWARD";
	case UMC_SM_UNSUBSCRIBE_REPLY:
		return "UNSUBSCRIBE reply";
	case UMC_SM_SQUATTED_REPLY:
		return "SQUATTED reply";
	}
	return "UNKNOWN";
}

const char *umc_sm_status_str(uint16_t status)
{
	static const char *const names[] = {
		"OK", "UNKNOWN_PORT", "BAD_VERSION", "NO_RESOURCES", "NOT_FOUND", "GUID_IN_USE",
		"INVALID",
	};

	return status < sizeof(names) / sizeof(names[0]) ? names[status] : "UNKNOWN";
}
