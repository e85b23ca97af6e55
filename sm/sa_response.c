// SPDX-License-Identifier: MIT
/*
 * sa_response.c - the SA's responses, beneath the record handlers
 * (mcmember.c, cpi.c) and the dispatcher (sa.c), as OpenSM's
 * osm_sa_response.c sits beneath its handlers.
 *
 * Responses follow OpenSM 3.3.23 (osm_sa_respond, osm_sa_send_error): the
 * request's 56-byte header comes back with the R bit, Set answered as
 * GetResp (0x81), SM_Key zeroed (C15-0.1.5); an error reply is the whole
 * request echoed with the status.
 */
#include <string.h>

#include "sm.h"

static const char *method_str(uint8_t method)
{
	switch (method & 0x7f) {
	case UMC_MAD_METHOD_GET:
		return "Get";
	case UMC_MAD_METHOD_SET:
		return "Set";
	case UMC_SA_METHOD_GET_TABLE:
		return "GetTable";
	case UMC_SA_METHOD_DELETE:
		return "Delete";
	}
	return "method";
}

/*
 * respond_hdr - the header of the response to @h.
 * @h:           the request's header
 * @status:      MAD Status of the response
 * @attr_offset: AttributeOffset of the response
 * @out:         the response header: @h with the R bit set (a Set is
 *               answered by GetResp), @status, SM_Key 0
 */
static void respond_hdr(const struct umc_sa_hdr *h, uint16_t status, uint16_t attr_offset,
			struct umc_sa_hdr *out)
{
	*out = *h;
	if (h->mad.method == UMC_MAD_METHOD_SET)
		out->mad.method = UMC_MAD_METHOD_GET_RESP;
	else
		out->mad.method = h->mad.method | UMC_MAD_METHOD_RESP;
	out->mad.status = status;
	out->sm_key = 0;
	out->attr_offset = attr_offset;
}

/**
 * umc_sm_sa_error - answer a request with a non-zero status.
 * @sm:     the state (counters, log)
 * @port:   the requester, for the log
 * @req:    the request MAD (256 bytes), echoed whole
 * @h:      its decoded header
 * @status: MAD Status
 * @why:    what failed, for the -v log
 * @reply:  the reply (kind UMC_SM_SA_REPLY_MAD)
 *
 * A GetTable error is a single RMPP segment without records (AttributeOffset
 * 0, PayloadLength 20), as every GetTableResp travels with RMPP active.
 */
void umc_sm_sa_error(struct umc_sm *sm, const struct umc_sm_port *port, const uint8_t *req,
		     const struct umc_sa_hdr *h, uint16_t status, const char *why,
		     struct umc_sm_sa_reply *reply)
{
	struct umc_sa_hdr rh;
	bool table = h->mad.method == UMC_SA_METHOD_GET_TABLE;

	respond_hdr(h, status, table ? 0 : h->attr_offset, &rh);
	if (table) {
		rh.rmpp.version = UMC_RMPP_VERSION;
		rh.rmpp.type = UMC_RMPP_TYPE_DATA;
		rh.rmpp.resp_time = UMC_RMPP_NO_RESP_TIME;
		rh.rmpp.flags = UMC_RMPP_FLAG_ACTIVE | UMC_RMPP_FLAG_FIRST | UMC_RMPP_FLAG_LAST;
		rh.rmpp.status = 0;
		rh.rmpp.seg_num = 1;
		rh.rmpp.paylen_newwin = UMC_SA_CLASS_HDR_LEN;
	}
	memcpy(reply->mad, req, UMC_MAD_SIZE);
	umc_sa_hdr_encode(reply->mad, &rh);
	reply->kind = UMC_SM_SA_REPLY_MAD;
	if (status == UMC_MAD_STATUS_UNSUP_METHOD || status == UMC_MAD_STATUS_UNSUP_METHOD_ATTR)
		sm->cnt.sa_unsupported++;
	else if (status == UMC_MAD_STATUS_BAD_VERSION)
		sm->cnt.sa_bad_version++;
	else if (status == UMC_MAD_STATUS_BUSY)
		sm->cnt.sa_busy++;
	else
		sm->cnt.sa_rejected++;
	/* BUSY is load being shed: one line each would flood the log under a flood. */
	umc_sm_log(sm, status == UMC_MAD_STATUS_BUSY ? UMC_SM_LOG_DEBUG : UMC_SM_LOG_INFO,
		   "SA %s 0x%04x from LID %u: status 0x%04x %s: %s", method_str(h->mad.method),
		   h->mad.attr_id, port->lid, status, umc_sa_status_str(status), why);
}

/**
 * umc_sm_sa_respond - a successful response MAD with one attribute.
 * @h:           the request's header
 * @attr_offset: AttributeOffset of the response (8-byte words)
 * @reply:       the reply (kind UMC_SM_SA_REPLY_MAD): the response header,
 *               the SA data zeroed
 *
 * Returns: the SA data of reply->mad (UMC_SA_DATA_LEN bytes), for the
 * caller to encode its attribute into.
 */
uint8_t *umc_sm_sa_respond(const struct umc_sa_hdr *h, uint16_t attr_offset,
			   struct umc_sm_sa_reply *reply)
{
	struct umc_sa_hdr rh;

	respond_hdr(h, UMC_MAD_STATUS_SUCCESS, attr_offset, &rh);
	memset(reply->mad, 0, UMC_MAD_SIZE);
	umc_sa_hdr_encode(reply->mad, &rh);
	reply->kind = UMC_SM_SA_REPLY_MAD;
	return reply->mad + UMC_SA_HDR_LEN;
}

/**
 * umc_sm_sa_respond_table - a successful GetTable response.
 * @h:        the request's header
 * @table:    @nrecords MCMemberRecords of UMC_MCMEMBER_STRIDE bytes, owned
 *            by the state until the reply is sent
 * @nrecords: how many (0: an empty table, AttributeOffset 0)
 * @reply:    the reply (kind UMC_SM_SA_REPLY_TABLE): the response header in
 *            reply->mad, the records by reference
 */
void umc_sm_sa_respond_table(const struct umc_sa_hdr *h, const uint8_t *table, uint32_t nrecords,
			     struct umc_sm_sa_reply *reply)
{
	umc_sm_sa_respond(h, nrecords ? UMC_MCMEMBER_ATTR_OFFSET : 0, reply);
	reply->kind = UMC_SM_SA_REPLY_TABLE;
	reply->table = table;
	reply->table_len = (size_t)nrecords * UMC_MCMEMBER_STRIDE;
	reply->nrecords = nrecords;
}
