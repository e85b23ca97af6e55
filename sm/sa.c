// SPDX-License-Identifier: MIT
/*
 * sa.c - the SA's front door: one SA MAD from a registered port is
 * checked and dispatched by attribute and method (IBA 15.2.1, 13.4) to the
 * record handlers (mcmember.c, cpi.c).
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
 * The responses are built beneath, in sa_response.c, as OpenSM's
 * osm_sa_mad_ctrl.c dispatches above its record handlers and
 * osm_sa_response.c answers below them.
 */
#include <string.h>

#include "sm.h"

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
 * umc_sm_sa_classify - how soon to serve an SA MAD, judged cheaply.
 * @sm:   the state
 * @port: the registered port it came from
 * @mad:  the MAD, UMC_MAD_SIZE bytes
 * @busy: filled with the BUSY reply when the answer is UMC_SM_SA_BUSY
 *
 * An MCMemberRecord Get or GetTable that names neither an MGID nor an MLID
 * scans every group and sorts what it finds: it waits (UMC_SM_SA_LATER)
 * behind what keeps ports alive and in their groups.  Such a GetTable
 * whose answer could need a transfer the port cannot have is refused
 * BUSY at once, before any work.  Everything else is served at once:
 * RMPP control, Set, Delete, a query of one group, ClassPortInfo, and
 * whatever umc_sm_sa_process() drops or refuses on its header alone.
 */
enum umc_sm_sa_class umc_sm_sa_classify(struct umc_sm *sm, struct umc_sm_port *port,
					const uint8_t *mad, struct umc_sm_sa_reply *busy)
{
	struct umc_mcmember rec;
	struct umc_sa_hdr h;

	if (umc_sa_hdr_decode(mad, UMC_MAD_SIZE, &h) || h.mad.mgmt_class != UMC_MGMT_CLASS_SUBN_ADM ||
	    h.mad.base_version != UMC_MAD_BASE_VERSION ||
	    h.mad.class_version != UMC_SA_CLASS_VERSION || (h.sm_key && h.sm_key != sm->cfg.sm_key) ||
	    h.mad.attr_id != UMC_SA_ATTR_MCMEMBER_RECORD ||
	    (h.mad.method != UMC_MAD_METHOD_GET && h.mad.method != UMC_SA_METHOD_GET_TABLE) ||
	    (h.comp_mask & (UMC_MCM_COMP_MGID | UMC_MCM_COMP_MLID)) ||
	    ((h.rmpp.flags & UMC_RMPP_FLAG_ACTIVE) && h.rmpp.type != UMC_RMPP_TYPE_DATA))
		return UMC_SM_SA_NOW;
	umc_mcmember_decode(mad + UMC_SA_HDR_LEN, &rec);
	if (h.mad.method == UMC_SA_METHOD_GET_TABLE && !umc_sm_sa_mcmember_fits(sm, port, &h, &rec)) {
		umc_sm_sa_error(sm, port, mad, &h, UMC_MAD_STATUS_BUSY,
				"no room for another GetTable transfer", busy);
		return UMC_SM_SA_BUSY;
	}
	return UMC_SM_SA_LATER;
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
