/* SPDX-License-Identifier: MIT */
/*
 * ib_mad.h - pure codecs for Subnet Administration MADs: the 256-byte SA
 * MAD header (common MAD header, RMPP header, SA header), MCMemberRecord
 * and ClassPortInfo.
 *
 * Layout of an SA MAD (IBA Vol 1 13.4.3 common MAD header, 13.6.2 RMPP
 * header, 15.2.1.1 SA header; all fields big-endian):
 *
 *    0 BaseVersion (1)        1 MgmtClass (0x03)    2 ClassVersion (2)
 *    3 R (0x80) | Method      4 Status (2)          6 ClassSpecific (2)
 *    8 TransactionID (8)     16 AttributeID (2)    18 reserved (2)
 *   20 AttributeModifier (4)
 *   24 RMPPVersion           25 RMPPType           26 RRespTime 7:3 | RMPPFlags 2:0
 *   27 RMPPStatus            28 SegmentNumber (4)  32 PayloadLength / NewWindowLast (4)
 *   36 SM_Key (8)            44 AttributeOffset (2, in 8-byte words)
 *   46 reserved (2)          48 ComponentMask (8)  56 SA data (200)
 *
 * MCMemberRecord (IBA 15.2.5.17), 52 bytes, 56 apart in a table
 * (AttributeOffset 7):
 *
 *    0 MGID (16)   16 PortGID (16)   32 Q_Key (4)   36 MLID (2)
 *   38 MTUSelector 7:6 | MTU 5:0     39 TClass      40 P_Key (2)
 *   42 RateSelector 7:6 | Rate 5:0   43 PacketLifeTimeSelector 7:6 | PacketLifeTime 5:0
 *   44 SL 31:28 | FlowLabel 27:8 | HopLimit 7:0 (4)
 *   48 Scope 7:4 | JoinState 3:0     49 ProxyJoin 7 | reserved 6:0   50 reserved (2)
 *
 * ProxyJoin is bit 7 (0x80) of byte 49, as in the specification, the
 * kernel and libibmad (OpenSM 3.3.23 writes bit 0: its ib_types.h declares
 * ib_member_rec_t's proxy_join as a 1-bit field, which GCC puts in bit 0).
 *
 * ClassPortInfo (IBA 13.4.8.1), 72 bytes: CapabilityMask2 and RespTimeValue
 * share the word at byte 4 as CapabilityMask2 << 5 | RespTimeValue.
 *
 * Nothing here does I/O or keeps state: decoders read only the bytes they
 * are given, encoders write reserved fields as zero.
 */
#ifndef UMC_WIRE_IB_MAD_H
#define UMC_WIRE_IB_MAD_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	UMC_MAD_SIZE = 256,
	UMC_MAD_HDR_LEN = 24,	  /* common MAD header */
	UMC_RMPP_HDR_LEN = 12,
	UMC_SA_HDR_LEN = 56,	  /* common + RMPP + SA headers */
	UMC_SA_DATA_LEN = 200,
	UMC_SA_CLASS_HDR_LEN = 20, /* SM_Key .. ComponentMask: counted in RMPP PayloadLength */
	UMC_RMPP_SEG_PAYLOAD = UMC_SA_CLASS_HDR_LEN + UMC_SA_DATA_LEN, /* 220 */
	UMC_MCMEMBER_LEN = 52,
	UMC_MCMEMBER_STRIDE = 56,
	UMC_MCMEMBER_ATTR_OFFSET = UMC_MCMEMBER_STRIDE / 8,
	UMC_CPI_LEN = 72,

	UMC_MAD_BASE_VERSION = 1,
	UMC_MGMT_CLASS_SUBN_ADM = 0x03,
	UMC_SA_CLASS_VERSION = 2,
	UMC_RMPP_VERSION = 1,
	UMC_GSI_QKEY = 0x80010000, /* QP1 well-known Q_Key */
};

/* Methods (IBA 13.4.5, 15.2.2); a response is the request | UMC_MAD_METHOD_RESP. */
enum umc_mad_method {
	UMC_MAD_METHOD_GET = 0x01,
	UMC_MAD_METHOD_SET = 0x02,
	UMC_MAD_METHOD_SEND = 0x03,
	UMC_MAD_METHOD_TRAP = 0x05,
	UMC_MAD_METHOD_REPORT = 0x06,
	UMC_MAD_METHOD_TRAP_REPRESS = 0x07,
	UMC_SA_METHOD_GET_TABLE = 0x12,
	UMC_SA_METHOD_GET_TRACE_TABLE = 0x13,
	UMC_SA_METHOD_GET_MULTI = 0x14,
	UMC_SA_METHOD_DELETE = 0x15,
	UMC_MAD_METHOD_RESP = 0x80,
	UMC_MAD_METHOD_GET_RESP = 0x81,
	UMC_SA_METHOD_GET_TABLE_RESP = 0x92,
	UMC_SA_METHOD_DELETE_RESP = 0x95,
};

/* Attribute IDs (IBA 13.4.8, 15.2.5). */
enum umc_sa_attr {
	UMC_SA_ATTR_CLASS_PORT_INFO = 0x0001,
	UMC_SA_ATTR_NOTICE = 0x0002,
	UMC_SA_ATTR_INFORM_INFO = 0x0003,
	UMC_SA_ATTR_PATH_RECORD = 0x0035,
	UMC_SA_ATTR_MCMEMBER_RECORD = 0x0038,
};

/*
 * MAD Status (IBA 13.4.7): bits 4:2 are the common "invalid field" codes,
 * bits 15:8 the SA class-specific code (IBA 15.2.1.1 Table 184).
 */
enum umc_sa_status {
	UMC_MAD_STATUS_SUCCESS = 0x0000,
	UMC_MAD_STATUS_BUSY = 0x0001,
	UMC_MAD_STATUS_REDIRECT = 0x0002,
	UMC_MAD_STATUS_BAD_VERSION = 0x0004,
	UMC_MAD_STATUS_UNSUP_METHOD = 0x0008,
	UMC_MAD_STATUS_UNSUP_METHOD_ATTR = 0x000C,
	UMC_MAD_STATUS_INVALID_FIELD = 0x001C,
	UMC_SA_STATUS_NO_RESOURCES = 0x0100,
	UMC_SA_STATUS_REQ_INVALID = 0x0200,
	UMC_SA_STATUS_NO_RECORDS = 0x0300,
	UMC_SA_STATUS_TOO_MANY_RECORDS = 0x0400,
	UMC_SA_STATUS_INVALID_GID = 0x0500,
	UMC_SA_STATUS_INSUF_COMPS = 0x0600,
	UMC_SA_STATUS_DENIED = 0x0700,
	UMC_SA_STATUS_PRIO_SUGGESTED = 0x0800,
};

/* RMPP (IBA 13.6.2): types, flags (low 3 bits of byte 26), statuses. */
enum umc_rmpp {
	UMC_RMPP_TYPE_DATA = 1,
	UMC_RMPP_TYPE_ACK = 2,
	UMC_RMPP_TYPE_STOP = 3,
	UMC_RMPP_TYPE_ABORT = 4,
	UMC_RMPP_FLAG_ACTIVE = 0x1,
	UMC_RMPP_FLAG_FIRST = 0x2,
	UMC_RMPP_FLAG_LAST = 0x4,
	UMC_RMPP_NO_RESP_TIME = 0x1F, /* RRespTime: no time value given */
	UMC_RMPP_STATUS_OK = 0,
	UMC_RMPP_STATUS_RESX = 1,	   /* STOP: resources exhausted */
	UMC_RMPP_STATUS_T2L = 118,	   /* ABORT: total time too long */
	UMC_RMPP_STATUS_BAD_LEN = 119,	   /* inconsistent last and first PayloadLength */
	UMC_RMPP_STATUS_BAD_SEG = 120,	   /* first segment without SegmentNumber 1 */
	UMC_RMPP_STATUS_BADT = 121,	   /* illegal RMPPType */
	UMC_RMPP_STATUS_W2S = 122,	   /* NewWindowLast too small */
	UMC_RMPP_STATUS_S2B = 123,	   /* SegmentNumber too big */
	UMC_RMPP_STATUS_BAD_STATUS = 124, /* illegal status */
	UMC_RMPP_STATUS_UNV = 125,	   /* unsupported RMPPVersion */
	UMC_RMPP_STATUS_TMR = 126,	   /* too many retries */
	UMC_RMPP_STATUS_UNSPEC = 127,
};

/* MCMemberRecord ComponentMask bits (IBA 15.2.5.17). */
enum umc_mcm_comp {
	UMC_MCM_COMP_MGID = 1 << 0,
	UMC_MCM_COMP_PORT_GID = 1 << 1,
	UMC_MCM_COMP_QKEY = 1 << 2,
	UMC_MCM_COMP_MLID = 1 << 3,
	UMC_MCM_COMP_MTU_SEL = 1 << 4,
	UMC_MCM_COMP_MTU = 1 << 5,
	UMC_MCM_COMP_TCLASS = 1 << 6,
	UMC_MCM_COMP_PKEY = 1 << 7,
	UMC_MCM_COMP_RATE_SEL = 1 << 8,
	UMC_MCM_COMP_RATE = 1 << 9,
	UMC_MCM_COMP_PKT_LIFE_SEL = 1 << 10,
	UMC_MCM_COMP_PKT_LIFE = 1 << 11,
	UMC_MCM_COMP_SL = 1 << 12,
	UMC_MCM_COMP_FLOW = 1 << 13,
	UMC_MCM_COMP_HOP = 1 << 14,
	UMC_MCM_COMP_SCOPE = 1 << 15,
	UMC_MCM_COMP_JOIN_STATE = 1 << 16,
	UMC_MCM_COMP_PROXY = 1 << 17,
	/* Set and Delete need these (o15-0.1.x; OpenSM JOIN_MC_COMP_MASK). */
	UMC_MCM_JOIN_MASK = UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID | UMC_MCM_COMP_JOIN_STATE,
	/* Creating a group needs these (o15-0.2.3; the kernel's join mask). */
	UMC_MCM_CREATE_MASK = UMC_MCM_JOIN_MASK | UMC_MCM_COMP_QKEY | UMC_MCM_COMP_TCLASS |
			      UMC_MCM_COMP_PKEY | UMC_MCM_COMP_FLOW | UMC_MCM_COMP_SL,
};

/* JoinState bits (IBA 15.2.5.17). */
enum umc_join_state {
	UMC_JOIN_FULL = 0x1,
	UMC_JOIN_NON = 0x2,
	UMC_JOIN_SENDONLY_NON = 0x4,
	UMC_JOIN_SENDONLY_FULL = 0x8,
	/* Either makes a port a "full member" for group lifetime. */
	UMC_JOIN_ANY_FULL = UMC_JOIN_FULL | UMC_JOIN_SENDONLY_FULL,
};

/* Selectors of MTU, Rate and PacketLifeTime (IBA 15.2.5.16). */
enum umc_sa_selector {
	UMC_SA_SEL_GT = 0,
	UMC_SA_SEL_LT = 1,
	UMC_SA_SEL_EXACT = 2,
	UMC_SA_SEL_BEST = 3, /* largest MTU/rate, smallest packet life time */
};

/* Multicast GID scopes (IBA 4.1.1). */
enum umc_mgid_scope {
	UMC_MGID_SCOPE_LINK = 0x2,
	UMC_MGID_SCOPE_SITE = 0x5,
	UMC_MGID_SCOPE_ORG = 0x8,
	UMC_MGID_SCOPE_GLOBAL = 0xE,
};

/* ClassPortInfo bits the SA uses (IBA 15.2.1.1; kernel ib_sa.h; OpenSM osm_base.h). */
enum umc_sa_cap {
	UMC_SA_CAP_UD_MCAST = 1 << 9,		    /* CapabilityMask.IsUDMulticastSupported */
	UMC_SA_CAP2_SENDONLY_FULL = 1 << 12,	    /* CapabilityMask2.IsSendOnlyFullMemberSupported */
	UMC_CPI_CAP_MASK2_SHIFT = 5,
	UMC_CPI_RESP_TIME_MASK = 0x1F,
};

/*
 * Wire layouts: every member is a byte or a byte array, so a struct has no
 * padding and may overlay any buffer.  Multi-byte fields are big-endian
 * (wire/be.h).
 */
struct umc_sa_mad_wire {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint8_t status[2];
	uint8_t class_specific[2];
	uint8_t tid[8];
	uint8_t attr_id[2];
	uint8_t resv0[2];
	uint8_t attr_mod[4];
	uint8_t rmpp_version;
	uint8_t rmpp_type;
	uint8_t rmpp_rtime_flags;
	uint8_t rmpp_status;
	uint8_t seg_num[4];
	uint8_t paylen_newwin[4];
	uint8_t sm_key[8];
	uint8_t attr_offset[2];
	uint8_t resv1[2];
	uint8_t comp_mask[8];
	uint8_t data[UMC_SA_DATA_LEN];
};
static_assert(sizeof(struct umc_sa_mad_wire) == UMC_MAD_SIZE, "SA MAD is 256 bytes");
static_assert(offsetof(struct umc_sa_mad_wire, rmpp_version) == UMC_MAD_HDR_LEN, "RMPP at 24");
static_assert(offsetof(struct umc_sa_mad_wire, sm_key) == 36, "SM_Key at 36");
static_assert(offsetof(struct umc_sa_mad_wire, data) == UMC_SA_HDR_LEN, "SA data at 56");

struct umc_mcmember_wire {
	uint8_t mgid[16];
	uint8_t port_gid[16];
	uint8_t qkey[4];
	uint8_t mlid[2];
	uint8_t mtu;	     /* selector 7:6, value 5:0 */
	uint8_t tclass;
	uint8_t pkey[2];
	uint8_t rate;	     /* selector 7:6, value 5:0 */
	uint8_t pkt_life;    /* selector 7:6, value 5:0 */
	uint8_t sl_flow_hop[4];
	uint8_t scope_join;  /* Scope 7:4, JoinState 3:0 */
	uint8_t proxy;	     /* ProxyJoin 7 */
	uint8_t resv[2];
};
static_assert(sizeof(struct umc_mcmember_wire) == UMC_MCMEMBER_LEN, "MCMemberRecord is 52 bytes");
static_assert(offsetof(struct umc_mcmember_wire, sl_flow_hop) == 44, "SL/FlowLabel/HopLimit at 44");

struct umc_cpi_wire {
	uint8_t base_version;
	uint8_t class_version;
	uint8_t cap_mask[2];
	uint8_t cap_mask2_resp_time[4];
	uint8_t redir_gid[16];
	uint8_t redir_tc_sl_fl[4];
	uint8_t redir_lid[2];
	uint8_t redir_pkey[2];
	uint8_t redir_qp[4];	/* reserved 31:24, QP 23:0 */
	uint8_t redir_qkey[4];
	uint8_t trap_gid[16];
	uint8_t trap_tc_sl_fl[4];
	uint8_t trap_lid[2];
	uint8_t trap_pkey[2];
	uint8_t trap_hl_qp[4];	/* HopLimit 31:24, QP 23:0 */
	uint8_t trap_qkey[4];
};
static_assert(sizeof(struct umc_cpi_wire) == UMC_CPI_LEN, "ClassPortInfo is 72 bytes");

/* The decoded common MAD header (IBA 13.4.3). */
struct umc_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method; /* with the R bit */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

/* The decoded RMPP header (IBA 13.6.2.1). */
struct umc_rmpp_hdr {
	uint8_t version;
	uint8_t type;
	uint8_t resp_time; /* 5 bits */
	uint8_t flags;	   /* 3 bits: UMC_RMPP_FLAG_* */
	uint8_t status;
	uint32_t seg_num;
	uint32_t paylen_newwin;
};

/* The decoded first 56 bytes of an SA MAD. */
struct umc_sa_hdr {
	struct umc_mad_hdr mad;
	struct umc_rmpp_hdr rmpp;
	uint64_t sm_key;
	uint16_t attr_offset;
	uint64_t comp_mask;
};

/* MCMemberRecord, decoded; GIDs in wire order, the rest in host order. */
struct umc_mcmember {
	uint8_t mgid[16];
	uint8_t port_gid[16];
	uint32_t qkey;
	uint16_t mlid;
	uint8_t mtu_sel, mtu;
	uint8_t tclass;
	uint16_t pkey;
	uint8_t rate_sel, rate;
	uint8_t pkt_life_sel, pkt_life;
	uint8_t sl;	      /* 4 bits */
	uint32_t flow_label;  /* 20 bits */
	uint8_t hop_limit;
	uint8_t scope;	      /* 4 bits */
	uint8_t join_state;   /* 4 bits */
	bool proxy_join;
};

/* ClassPortInfo, decoded (IBA 13.4.8.1). */
struct umc_class_port_info {
	uint8_t base_version;
	uint8_t class_version;
	uint16_t cap_mask;
	uint32_t cap_mask2; /* 27 bits */
	uint8_t resp_time;  /* 5 bits */
	uint8_t redir_gid[16];
	uint8_t redir_tclass, redir_sl;
	uint32_t redir_flow_label;
	uint16_t redir_lid, redir_pkey;
	uint32_t redir_qp, redir_qkey;
	uint8_t trap_gid[16];
	uint8_t trap_tclass, trap_sl;
	uint32_t trap_flow_label;
	uint16_t trap_lid, trap_pkey;
	uint8_t trap_hop_limit;
	uint32_t trap_qp, trap_qkey;
};

/**
 * umc_sa_hdr_decode - decode the header fields of an SA MAD.
 * @p:   the MAD
 * @len: its length; an SA MAD is exactly UMC_MAD_SIZE bytes
 * @h:   decoded fields (reserved fields are not kept)
 *
 * Only the length is checked: whether versions, class and method are
 * acceptable is the receiver's decision (it answers with a MAD status).
 *
 * Context: pure.
 * Returns: 0, or -EBADMSG if @len is not UMC_MAD_SIZE.
 */
int umc_sa_hdr_decode(const uint8_t *p, size_t len, struct umc_sa_hdr *h);

/**
 * umc_sa_hdr_encode - write the first UMC_SA_HDR_LEN bytes of an SA MAD.
 * @out: UMC_SA_HDR_LEN bytes; reserved fields are written as zero
 * @h:   the fields; those wider than their wire field are truncated
 *
 * Context: pure.
 */
void umc_sa_hdr_encode(uint8_t *out, const struct umc_sa_hdr *h);

/**
 * umc_sa_request_encode - a whole SA request MAD: the headers of a
 * SubnAdm (class 0x03, version 2) @method on @attr_id with @comp_mask and
 * @sm_key (TransactionID 0: the SA client writes it), then @rec as its
 * data when the attribute is an MCMemberRecord and @rec is not NULL.
 * @mad: UMC_MAD_SIZE bytes, written whole (what is not set is zero)
 *
 * Context: pure.
 */
void umc_sa_request_encode(uint8_t *mad, uint8_t method, uint16_t attr_id, uint64_t comp_mask,
			   uint64_t sm_key, const struct umc_mcmember *rec);

/**
 * umc_mcmember_decode - decode an MCMemberRecord (IBA 15.2.5.17).
 * @in: UMC_MCMEMBER_LEN bytes
 * @r:  decoded record; ProxyJoin is bit 7 of byte 49, reserved bits ignored
 *
 * Context: pure.
 */
void umc_mcmember_decode(const uint8_t *in, struct umc_mcmember *r);

/**
 * umc_mcmember_encode - write an MCMemberRecord and its table padding.
 * @out: UMC_MCMEMBER_STRIDE bytes: the 52-byte record, then 4 zero bytes
 * @r:   the record; ProxyJoin is written as 0x80 in byte 49
 *
 * Context: pure.
 */
void umc_mcmember_encode(uint8_t *out, const struct umc_mcmember *r);

/**
 * umc_cpi_decode - decode a ClassPortInfo attribute (IBA 13.4.8.1).
 * @in: UMC_CPI_LEN bytes
 * @c:  decoded fields
 *
 * Context: pure.
 */
void umc_cpi_decode(const uint8_t *in, struct umc_class_port_info *c);

/**
 * umc_cpi_encode - write a ClassPortInfo attribute.
 * @out: UMC_CPI_LEN bytes
 * @c:   the fields; CapabilityMask2 is cut to 27 bits, RespTimeValue to 5
 *
 * Context: pure.
 */
void umc_cpi_encode(uint8_t *out, const struct umc_class_port_info *c);

/**
 * umc_sa_status_str - the IBA name of an SA MAD status (e.g. "ERR_REQ_INVALID").
 * @status: the 16-bit MAD Status
 *
 * Returns: a static string; "UNKNOWN" for a value not in IBA 13.4.7 or
 * 15.2.1.1.
 */
const char *umc_sa_status_str(uint16_t status);

/** umc_mad_is_response - the method has the R bit (IBA 13.4.5). */
static inline bool umc_mad_is_response(uint8_t method)
{
	return method & UMC_MAD_METHOD_RESP;
}

/**
 * umc_sa_method_uses_rmpp - the SA method (request or response) travels
 * with RMPP active: GetTable, GetTraceTable and GetMulti (IBA 15.2.2 Table
 * 182; 15.4).  Get, Set, Delete and their responses are single MADs.
 */
static inline bool umc_sa_method_uses_rmpp(uint8_t method)
{
	switch (method & (uint8_t)~UMC_MAD_METHOD_RESP) {
	case UMC_SA_METHOD_GET_TABLE:
	case UMC_SA_METHOD_GET_TRACE_TABLE:
	case UMC_SA_METHOD_GET_MULTI:
		return true;
	}
	return false;
}

/**
 * umc_sa_rate_order - the bandwidth rank of a PathRecord rate code (IBA
 * 15.2.5.16 Table 205), so that rates compare by speed: 2.5 < 5 < 10 < 14
 * < 20 < 25 < ... Gb/s.  Codes outside 2..22 rank 0.
 */
int umc_sa_rate_order(unsigned rate);

/**
 * umc_sa_rate_step - the next faster (@dir > 0) or slower (@dir < 0) rate code.
 *
 * Returns: the rate code, or 0 if there is none (or @rate is not a valid code).
 */
unsigned umc_sa_rate_step(unsigned rate, int dir);

/** umc_sa_rate_valid - PathRecord rate codes 2 (2.5 Gb/s) to 22 (600 Gb/s). */
static inline bool umc_sa_rate_valid(unsigned rate)
{
	return rate >= 2 && rate <= 22;
}

/** umc_sa_mtu_valid - IB MTU codes 1 (256) to 5 (4096). */
static inline bool umc_sa_mtu_valid(unsigned mtu)
{
	return mtu >= 1 && mtu <= 5;
}

#endif /* UMC_WIRE_IB_MAD_H */
