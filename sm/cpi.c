// SPDX-License-Identifier: MIT
/*
 * cpi.c - SA ClassPortInfo (IBA 13.4.8.1, 15.2.1.1).
 *
 * What umc-sm advertises is what it implements: CapabilityMask
 * IsUDMulticastSupported (bit 9), CapabilityMask2
 * IsSendOnlyFullMemberSupported (bit 12) unless started with
 * --no-sendonly.  OpenSM 3.3.23 also sets bits for records umc-sm does
 * not serve (notices, multipath, PortInfo capability matching ...): a
 * deliberate difference.  RespTimeValue, the redirect and trap fields are
 * OpenSM's: 16, QP 1 with the GSI Q_Key, no redirection.
 */
#include "sm.h"

/**
 * umc_sm_sa_cpi - answer a SubnAdmGet(ClassPortInfo).
 * @sm:    the state (cfg.sendonly)
 * @mad:   the request
 * @h:     its header
 * @reply: the GetResp with the attribute
 */
void umc_sm_sa_cpi(struct umc_sm *sm, const uint8_t *mad, const struct umc_sa_hdr *h,
		   struct umc_sm_sa_reply *reply)
{
	struct umc_class_port_info cpi = {
		.base_version = UMC_MAD_BASE_VERSION,
		.class_version = UMC_SA_CLASS_VERSION,
		.cap_mask = UMC_SA_CAP_UD_MCAST,
		.cap_mask2 = sm->cfg.sendonly ? UMC_SA_CAP2_SENDONLY_FULL : 0,
		.resp_time = UMC_SM_RESP_TIME_VALUE,
		.redir_qp = 1,
		.redir_qkey = UMC_GSI_QKEY,
		.trap_qkey = UMC_GSI_QKEY,
	};

	(void)mad;
	umc_cpi_encode(umc_sm_sa_respond(h, h->attr_offset, reply), &cpi);
}
