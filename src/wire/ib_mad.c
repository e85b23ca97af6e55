// SPDX-License-Identifier: MIT
/*
 * ib_mad.c - SA MAD header, MCMemberRecord and ClassPortInfo codecs.
 *
 * The layouts are in ib_mad.h.  Decoders read fixed offsets of buffers
 * whose size the caller has checked once; encoders write every byte of
 * their output, reserved bytes as zero (IBA 13.4.2: reserved fields are
 * sent as zero and ignored on receive).
 */
#include <errno.h>
#include <string.h>

#include "wire/be.h"
#include "wire/ib_mad.h"

enum {
	SEL_SHIFT = 6,
	VAL_MASK = 0x3f,
	RMPP_RTIME_SHIFT = 3,
	RMPP_FLAGS_MASK = 0x07,
	PROXY_BIT = 0x80,
};

int umc_sa_hdr_decode(const uint8_t *p, size_t len, struct umc_sa_hdr *h)
{
	const struct umc_sa_mad_wire *w = (const void *)p;

	if (len != UMC_MAD_SIZE)
		return -EBADMSG;
	h->mad.base_version = w->base_version;
	h->mad.mgmt_class = w->mgmt_class;
	h->mad.class_version = w->class_version;
	h->mad.method = w->method;
	h->mad.status = (uint16_t)get_be16(w->status);
	h->mad.class_specific = (uint16_t)get_be16(w->class_specific);
	h->mad.tid = get_be64(w->tid);
	h->mad.attr_id = (uint16_t)get_be16(w->attr_id);
	h->mad.attr_mod = get_be32(w->attr_mod);
	h->rmpp.version = w->rmpp_version;
	h->rmpp.type = w->rmpp_type;
	h->rmpp.resp_time = w->rmpp_rtime_flags >> RMPP_RTIME_SHIFT;
	h->rmpp.flags = w->rmpp_rtime_flags & RMPP_FLAGS_MASK;
	h->rmpp.status = w->rmpp_status;
	h->rmpp.seg_num = get_be32(w->seg_num);
	h->rmpp.paylen_newwin = get_be32(w->paylen_newwin);
	h->sm_key = get_be64(w->sm_key);
	h->attr_offset = (uint16_t)get_be16(w->attr_offset);
	h->comp_mask = get_be64(w->comp_mask);
	return 0;
}

void umc_sa_request_encode(uint8_t *mad, uint8_t method, uint16_t attr_id, uint64_t comp_mask,
			   uint64_t sm_key, const struct umc_mcmember *rec)
{
	struct umc_sa_hdr h = {
		.mad = {.base_version = UMC_MAD_BASE_VERSION,
			.mgmt_class = UMC_MGMT_CLASS_SUBN_ADM,
			.class_version = UMC_SA_CLASS_VERSION,
			.method = method,
			.attr_id = attr_id},
		.sm_key = sm_key,
		.comp_mask = comp_mask,
	};

	memset(mad, 0, UMC_MAD_SIZE);
	umc_sa_hdr_encode(mad, &h);
	if (rec && attr_id == UMC_SA_ATTR_MCMEMBER_RECORD)
		umc_mcmember_encode(mad + UMC_SA_HDR_LEN, rec);
}

void umc_sa_hdr_encode(uint8_t *out, const struct umc_sa_hdr *h)
{
	struct umc_sa_mad_wire *w = (void *)out;

	memset(out, 0, UMC_SA_HDR_LEN);
	w->base_version = h->mad.base_version;
	w->mgmt_class = h->mad.mgmt_class;
	w->class_version = h->mad.class_version;
	w->method = h->mad.method;
	put_be16(w->status, h->mad.status);
	put_be16(w->class_specific, h->mad.class_specific);
	put_be64(w->tid, h->mad.tid);
	put_be16(w->attr_id, h->mad.attr_id);
	put_be32(w->attr_mod, h->mad.attr_mod);
	w->rmpp_version = h->rmpp.version;
	w->rmpp_type = h->rmpp.type;
	w->rmpp_rtime_flags = (uint8_t)(h->rmpp.resp_time << RMPP_RTIME_SHIFT |
					(h->rmpp.flags & RMPP_FLAGS_MASK));
	w->rmpp_status = h->rmpp.status;
	put_be32(w->seg_num, h->rmpp.seg_num);
	put_be32(w->paylen_newwin, h->rmpp.paylen_newwin);
	put_be64(w->sm_key, h->sm_key);
	put_be16(w->attr_offset, h->attr_offset);
	put_be64(w->comp_mask, h->comp_mask);
}

static inline uint8_t sel_val(uint8_t sel, uint8_t val)
{
	return (uint8_t)(sel << SEL_SHIFT | (val & VAL_MASK));
}

void umc_mcmember_decode(const uint8_t *in, struct umc_mcmember *r)
{
	const struct umc_mcmember_wire *w = (const void *)in;
	uint32_t sfh = get_be32(w->sl_flow_hop);

	memcpy(r->mgid, w->mgid, 16);
	memcpy(r->port_gid, w->port_gid, 16);
	r->qkey = get_be32(w->qkey);
	r->mlid = (uint16_t)get_be16(w->mlid);
	r->mtu_sel = w->mtu >> SEL_SHIFT;
	r->mtu = w->mtu & VAL_MASK;
	r->tclass = w->tclass;
	r->pkey = (uint16_t)get_be16(w->pkey);
	r->rate_sel = w->rate >> SEL_SHIFT;
	r->rate = w->rate & VAL_MASK;
	r->pkt_life_sel = w->pkt_life >> SEL_SHIFT;
	r->pkt_life = w->pkt_life & VAL_MASK;
	r->sl = (uint8_t)(sfh >> 28);
	r->flow_label = (sfh >> 8) & 0xfffff;
	r->hop_limit = (uint8_t)sfh;
	r->scope = w->scope_join >> 4;
	r->join_state = w->scope_join & 0x0f;
	r->proxy_join = w->proxy & PROXY_BIT;
}

void umc_mcmember_encode(uint8_t *out, const struct umc_mcmember *r)
{
	struct umc_mcmember_wire *w = (void *)out;

	memset(out, 0, UMC_MCMEMBER_STRIDE);
	memcpy(w->mgid, r->mgid, 16);
	memcpy(w->port_gid, r->port_gid, 16);
	put_be32(w->qkey, r->qkey);
	put_be16(w->mlid, r->mlid);
	w->mtu = sel_val(r->mtu_sel, r->mtu);
	w->tclass = r->tclass;
	put_be16(w->pkey, r->pkey);
	w->rate = sel_val(r->rate_sel, r->rate);
	w->pkt_life = sel_val(r->pkt_life_sel, r->pkt_life);
	put_be32(w->sl_flow_hop, (uint32_t)(r->sl & 0xf) << 28 | (r->flow_label & 0xfffff) << 8 |
					 r->hop_limit);
	w->scope_join = (uint8_t)((r->scope & 0xf) << 4 | (r->join_state & 0xf));
	w->proxy = r->proxy_join ? PROXY_BIT : 0;
}

static void tc_sl_fl_decode(const uint8_t *p, uint8_t *tc, uint8_t *sl, uint32_t *fl)
{
	uint32_t v = get_be32(p);

	*tc = (uint8_t)(v >> 24);
	*sl = (v >> 20) & 0xf;
	*fl = v & 0xfffff;
}

static void tc_sl_fl_encode(uint8_t *p, uint8_t tc, uint8_t sl, uint32_t fl)
{
	put_be32(p, (uint32_t)tc << 24 | (uint32_t)(sl & 0xf) << 20 | (fl & 0xfffff));
}

void umc_cpi_decode(const uint8_t *in, struct umc_class_port_info *c)
{
	const struct umc_cpi_wire *w = (const void *)in;
	uint32_t cm2 = get_be32(w->cap_mask2_resp_time);

	c->base_version = w->base_version;
	c->class_version = w->class_version;
	c->cap_mask = (uint16_t)get_be16(w->cap_mask);
	c->cap_mask2 = cm2 >> UMC_CPI_CAP_MASK2_SHIFT;
	c->resp_time = cm2 & UMC_CPI_RESP_TIME_MASK;
	memcpy(c->redir_gid, w->redir_gid, 16);
	tc_sl_fl_decode(w->redir_tc_sl_fl, &c->redir_tclass, &c->redir_sl, &c->redir_flow_label);
	c->redir_lid = (uint16_t)get_be16(w->redir_lid);
	c->redir_pkey = (uint16_t)get_be16(w->redir_pkey);
	c->redir_qp = get_be24(w->redir_qp + 1);
	c->redir_qkey = get_be32(w->redir_qkey);
	memcpy(c->trap_gid, w->trap_gid, 16);
	tc_sl_fl_decode(w->trap_tc_sl_fl, &c->trap_tclass, &c->trap_sl, &c->trap_flow_label);
	c->trap_lid = (uint16_t)get_be16(w->trap_lid);
	c->trap_pkey = (uint16_t)get_be16(w->trap_pkey);
	c->trap_hop_limit = w->trap_hl_qp[0];
	c->trap_qp = get_be24(w->trap_hl_qp + 1);
	c->trap_qkey = get_be32(w->trap_qkey);
}

void umc_cpi_encode(uint8_t *out, const struct umc_class_port_info *c)
{
	struct umc_cpi_wire *w = (void *)out;

	memset(out, 0, UMC_CPI_LEN);
	w->base_version = c->base_version;
	w->class_version = c->class_version;
	put_be16(w->cap_mask, c->cap_mask);
	put_be32(w->cap_mask2_resp_time, (c->cap_mask2 & 0x7ffffff) << UMC_CPI_CAP_MASK2_SHIFT |
						 (c->resp_time & UMC_CPI_RESP_TIME_MASK));
	memcpy(w->redir_gid, c->redir_gid, 16);
	tc_sl_fl_encode(w->redir_tc_sl_fl, c->redir_tclass, c->redir_sl, c->redir_flow_label);
	put_be16(w->redir_lid, c->redir_lid);
	put_be16(w->redir_pkey, c->redir_pkey);
	put_be24(w->redir_qp + 1, c->redir_qp);
	put_be32(w->redir_qkey, c->redir_qkey);
	memcpy(w->trap_gid, c->trap_gid, 16);
	tc_sl_fl_encode(w->trap_tc_sl_fl, c->trap_tclass, c->trap_sl, c->trap_flow_label);
	put_be16(w->trap_lid, c->trap_lid);
	put_be16(w->trap_pkey, c->trap_pkey);
	w->trap_hl_qp[0] = c->trap_hop_limit;
	put_be24(w->trap_hl_qp + 1, c->trap_qp);
	put_be32(w->trap_qkey, c->trap_qkey);
}

const char *umc_sa_status_str(uint16_t status)
{
	static const char *const sa[] = {
		[1] = "ERR_NO_RESOURCES",	 [2] = "ERR_REQ_INVALID",
		[3] = "ERR_NO_RECORDS",		 [4] = "ERR_TOO_MANY_RECORDS",
		[5] = "ERR_REQ_INVALID_GID",	 [6] = "ERR_REQ_INSUFFICIENT_COMPONENTS",
		[7] = "ERR_REQ_DENIED",		 [8] = "ERR_REQ_PRIORITY_SUGGESTED",
	};
	static const char *const common[] = {
		[0] = "SUCCESS",
		[1] = "BAD_VERSION",
		[2] = "METHOD_NOT_SUPPORTED",
		[3] = "METHOD_ATTR_NOT_SUPPORTED",
		[7] = "INVALID_FIELD",
	};

	switch (status) {
	case UMC_MAD_STATUS_BUSY:
		return "BUSY";
	case UMC_MAD_STATUS_REDIRECT:
		return "REDIRECT";
	}
	if (!(status & 0xff) && (status >> 8) < sizeof(sa) / sizeof(sa[0]) && sa[status >> 8])
		return sa[status >> 8];
	if (!(status & ~0x1cu) && common[status >> 2])
		return common[status >> 2];
	return "UNKNOWN";
}

/*
 * Rate codes by bandwidth (IBA 15.2.5.16 Table 205): index = code, value
 * = rank.  Codes 2..22 are 2.5, 10, 30, 5, 20, 40, 60, 80, 120, 14, 56,
 * 112, 168, 25, 100, 200, 300, 28, 50, 400, 600 Gb/s; the 64b/66b rates
 * rank at their 8b/10b equivalent (14 as 17, 25 as 31.25, 28 as 35, 50 as
 * 62.5, 56 as 68 ...), the order OpenSM compares rates in.
 */
static const uint8_t rate_rank[23] = {
	0, 0, 1, 3, 6, 2, 5, 9, 10, 13, 14, 4, 12, 16, 17, 7, 15, 18, 19, 8, 11, 20, 21,
};

int umc_sa_rate_order(unsigned rate)
{
	return rate < sizeof(rate_rank) ? rate_rank[rate] : 0;
}

unsigned umc_sa_rate_step(unsigned rate, int dir)
{
	int want;
	unsigned i;

	if (!umc_sa_rate_valid(rate))
		return 0;
	want = rate_rank[rate] + (dir > 0 ? 1 : -1);
	for (i = 2; i < sizeof(rate_rank); i++)
		if (rate_rank[i] == want)
			return i;
	return 0;
}
