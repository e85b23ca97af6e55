// SPDX-License-Identifier: MIT
/*
 * sa.c - the SA's front door: one SA MAD from a registered port is
 * checked and dispatched by attribute and method (IBA 15.2.1, 13.4).
 *
 * Order of the checks, and what each failure gets:
 *   MgmtClass not 0x03 (SubnAdm)            dropped, counted
 *   SM_Key neither 0 nor ours               dropped, no reply (OpenSM 1A04)
 *   RMPP ACK/STOP/ABORT                      to the RMPP sender (rmpp.c)
 *   RMPP DATA other than one lone segment   dropped (no multi-MAD requests)
 *   a response (R bit)                      dropped, counted
 *   BaseVersion 1 / ClassVersion 2          else status 0x0004
 *   attribute MCMemberRecord: Get, Set, GetTable, Delete -> mcmember.c
 *   attribute ClassPortInfo:  Get                        -> cpi.c
 *   another method of the SA class          0x000C (method/attribute)
 *   a method the SA class does not have     0x0008
 *   another attribute                       0x000C
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

/**
 * umc_sm_sa_respond_hdr - the header of the response to @h.
 * @h:           the request's header
 * @status:      MAD Status of the response
 * @attr_offset: AttributeOffset of the response
 * @out:         the response header: @h with the R bit set (a Set is
 *               answered by GetResp), @status, SM_Key 0
 */
void umc_sm_sa_respond_hdr(const struct umc_sa_hdr *h, uint16_t status, uint16_t attr_offset,
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

	umc_sm_sa_respond_hdr(h, status, table ? 0 : h->attr_offset, &rh);
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
	umc_sm_log(sm, UMC_SM_LOG_INFO, "SA %s 0x%04x from LID %u: status 0x%04x %s: %s",
		   method_str(h->mad.method), h->mad.attr_id, port->lid, status,
		   umc_sa_status_str(status), why);
}

/* Methods of the SA class (IBA 15.2.2 Table 182) that a requester may send. */
static bool sa_class_method(uint8_t method)
{
	switch (method) {
	case UMC_MAD_METHOD_GET:
	case UMC_MAD_METHOD_SET:
	case UMC_MAD_METHOD_REPORT:
	case UMC_SA_METHOD_GET_TABLE:
	case UMC_SA_METHOD_GET_TRACE_TABLE:
	case UMC_SA_METHOD_GET_MULTI:
	case UMC_SA_METHOD_DELETE:
		return true;
	}
	return false;
}

static void unsupported(struct umc_sm *sm, const struct umc_sm_port *port, const uint8_t *mad,
			const struct umc_sa_hdr *h, struct umc_sm_sa_reply *reply)
{
	if (!sa_class_method(h->mad.method))
		umc_sm_sa_error(sm, port, mad, h, UMC_MAD_STATUS_UNSUP_METHOD, "no such SA method",
				reply);
	else
		umc_sm_sa_error(sm, port, mad, h, UMC_MAD_STATUS_UNSUP_METHOD_ATTR,
				"method not supported for this attribute", reply);
}

/* RMPP header of a request: true if the MAD is to be processed as a request. */
static bool rmpp_filter(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sa_hdr *h,
			uint64_t now)
{
	const uint8_t lone = UMC_RMPP_FLAG_FIRST | UMC_RMPP_FLAG_LAST;

	if (!h->rmpp.version || !(h->rmpp.flags & UMC_RMPP_FLAG_ACTIVE))
		return true;
	if (h->rmpp.version != UMC_RMPP_VERSION) {
		sm->cnt.sa_rmpp_bad++;
		return false;
	}
	switch (h->rmpp.type) {
	case UMC_RMPP_TYPE_ACK:
	case UMC_RMPP_TYPE_STOP:
	case UMC_RMPP_TYPE_ABORT:
		umc_sm_rmpp_control(sm, port, h, now);
		return false;
	case UMC_RMPP_TYPE_DATA:
		if ((h->rmpp.flags & lone) == lone && h->rmpp.seg_num == 1)
			return true;
		break;
	}
	sm->cnt.sa_rmpp_bad++;
	return false;
}

/**
 * umc_sm_sa_process - the SA's answer to one MAD.
 * @sm:    the state
 * @port:  the registered port the MAD came from (the requester)
 * @mad:   the MAD, UMC_MAD_SIZE bytes
 * @now:   ms on the SM's clock (RMPP control)
 * @reply: what to send back (see the top of this file for the checks)
 *
 * Context: the pure entry point of the SA: unit tests and the differential
 * test against OpenSM call it directly.
 */
void umc_sm_sa_process(struct umc_sm *sm, struct umc_sm_port *port, const uint8_t *mad,
		       uint64_t now, struct umc_sm_sa_reply *reply)
{
	struct umc_sa_hdr h;

	reply->kind = UMC_SM_SA_NO_REPLY;
	reply->table = NULL;
	reply->table_len = 0;
	reply->nrecords = 0;
	if (umc_sa_hdr_decode(mad, UMC_MAD_SIZE, &h))
		return;
	sm->cnt.sa_requests++;
	if (h.mad.mgmt_class != UMC_MGMT_CLASS_SUBN_ADM) {
		sm->cnt.sa_bad_class++;
		return;
	}
	if (h.sm_key && h.sm_key != sm->cfg.sm_key) {
		sm->cnt.sa_bad_smkey++;
		umc_sm_log(sm, UMC_SM_LOG_INFO, "SA MAD from LID %u with a wrong SM_Key: dropped",
			   port->lid);
		return;
	}
	if (!rmpp_filter(sm, port, &h, now))
		return;
	if (umc_mad_is_response(h.mad.method)) {
		sm->cnt.sa_response++;
		return;
	}
	if (h.mad.base_version != UMC_MAD_BASE_VERSION ||
	    h.mad.class_version != UMC_SA_CLASS_VERSION) {
		umc_sm_sa_error(sm, port, mad, &h, UMC_MAD_STATUS_BAD_VERSION,
				"BaseVersion must be 1, ClassVersion 2", reply);
		return;
	}
	switch (h.mad.attr_id) {
	case UMC_SA_ATTR_MCMEMBER_RECORD:
		switch (h.mad.method) {
		case UMC_MAD_METHOD_GET:
		case UMC_MAD_METHOD_SET:
		case UMC_SA_METHOD_GET_TABLE:
		case UMC_SA_METHOD_DELETE:
			umc_sm_sa_mcmember(sm, port, mad, &h, reply);
			return;
		}
		break;
	case UMC_SA_ATTR_CLASS_PORT_INFO:
		if (h.mad.method == UMC_MAD_METHOD_GET) {
			umc_sm_sa_cpi(sm, mad, &h, reply);
			return;
		}
		break;
	}
	unsupported(sm, port, mad, &h, reply);
}
