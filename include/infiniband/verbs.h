/* SPDX-License-Identifier: MIT */
/*
 * <infiniband/verbs.h> - umcast's verbs API: the subset of libibverbs that a
 * UD multicast program uses (devices, PD, MR, CQ + completion channel, UD QP,
 * AH, multicast attach), source- and binary-compatible with rdma-core 44.
 *
 * Every name, numeric value and struct layout matches rdma-core's libibverbs
 * (libibverbs 1.14, provider ABI IBVERBS_PRIVATE_34) on the same platform,
 * including the objects a program only reaches through the inline functions
 * below: the 32-slot struct ibv_context_ops and the struct verbs_context that
 * precedes every struct ibv_context.  So:
 *   - a program written for rdma-core builds unchanged against this header;
 *   - a program built against rdma-core's headers runs on umcast through the
 *     drop-in libraries (umc-run(1));
 *   - a program built against this header also runs on rdma-core's own
 *     libibverbs: the inline functions only use what both libraries provide.
 * The static assertions at the end pin every size and offset that compiled
 * code depends on; tests/abi compares each field with rdma-core's header.
 *
 * Only the verbs declared below are implemented: extended CQs, SRQs, memory
 * windows, flow steering, async events etc. are not.  A verbs_context slot
 * that umcast does not implement holds a function that fails with EOPNOTSUPP
 * (NULL and errno EOPNOTSUPP for pointer results), as libibverbs' own
 * defaults do.
 *
 * Return conventions (as the man pages of each verb say):
 *   - most int verbs return 0 or the positive errno value;
 *   - verbs returning a pointer return NULL and set errno;
 *   - ibv_poll_cq() returns the number of completions, negative on error;
 *   - a few verbs return -1 and set errno; their comments say so;
 *   - in a child of fork(2), every verb on an object the parent made fails
 *     at once with EIO in its own convention (ibv_poll_cq: -EIO), and a
 *     device of the parent's list opens the child's own device (umcast(7),
 *     FORK).
 */
#ifndef INFINIBAND_VERBS_H
#define INFINIBAND_VERBS_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <infiniband/umc_be_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A compile-time check of the layout (C11 and C++11). */
#ifdef __cplusplus
#define UMC_ABI_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define UMC_ABI_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

struct ibv_device;
struct ibv_context;
struct ibv_cq;
struct ibv_qp;
struct ibv_srq;
struct ibv_ah;
struct ibv_mw;
struct ibv_xrcd;
struct ibv_rwq_ind_table;

/*
 * Objects of rdma-core's API that umcast does not implement.  They appear
 * here only as pointer types, in the slots of struct verbs_context and
 * struct ibv_context_ops, whose layout must be rdma-core's.
 */
struct ibv_counters;
struct ibv_counters_init_attr;
struct ibv_counter_attach_attr;
struct ibv_cq_ex;
struct ibv_cq_init_attr_ex;
struct ibv_dm;
struct ibv_alloc_dm_attr;
struct ibv_flow;
struct ibv_flow_attr;
struct ibv_flow_action;
struct ibv_flow_action_esp_attr;
struct ibv_modify_cq_attr;
struct ibv_mw_bind;
struct ibv_ops_wr;
struct ibv_parent_domain_init_attr;
struct ibv_qp_open_attr;
struct ibv_qp_rate_limit_attr;
struct ibv_rwq_ind_table_init_attr;
struct ibv_srq_init_attr_ex;
struct ibv_td;
struct ibv_td_init_attr;
struct ibv_values_ex;
struct ibv_wq;
struct ibv_wq_attr;
struct ibv_wq_init_attr;
struct ibv_xrcd_init_attr;
struct verbs_ex_private;
/* The 48-byte port attributes of the IBVERBS_1.1 ibv_query_port() symbol. */
struct _compat_ibv_port_attr;

/* ------------------------------------------------------------------------- */
/* Identifiers                                                               */

/* A 128-bit Global Identifier (IBA 4.1.1), network byte order. */
union ibv_gid {
	uint8_t raw[16];
	struct {
		__be64 subnet_prefix;
		__be64 interface_id;
	} global;
};

/* ------------------------------------------------------------------------- */
/* Devices                                                                   */

enum ibv_node_type {
	IBV_NODE_UNKNOWN = -1,
	IBV_NODE_CA = 1,
	IBV_NODE_SWITCH,
	IBV_NODE_ROUTER,
	IBV_NODE_RNIC,
	IBV_NODE_USNIC,
	IBV_NODE_USNIC_UDP,
	IBV_NODE_UNSPECIFIED,
};

enum ibv_transport_type {
	IBV_TRANSPORT_UNKNOWN = -1,
	IBV_TRANSPORT_IB = 0,
	IBV_TRANSPORT_IWARP,
	IBV_TRANSPORT_USNIC,
	IBV_TRANSPORT_USNIC_UDP,
	IBV_TRANSPORT_UNSPECIFIED,
};

/* Bits of ibv_device_attr.device_cap_flags. */
enum ibv_device_cap_flags {
	IBV_DEVICE_RESIZE_MAX_WR = 1,
	IBV_DEVICE_BAD_PKEY_CNTR = 1 << 1,
	IBV_DEVICE_BAD_QKEY_CNTR = 1 << 2,
	IBV_DEVICE_RAW_MULTI = 1 << 3,
	IBV_DEVICE_AUTO_PATH_MIG = 1 << 4,
	IBV_DEVICE_CHANGE_PHY_PORT = 1 << 5,
	IBV_DEVICE_UD_AV_PORT_ENFORCE = 1 << 6,
	IBV_DEVICE_CURR_QP_STATE_MOD = 1 << 7,
	IBV_DEVICE_SHUTDOWN_PORT = 1 << 8,
	IBV_DEVICE_INIT_TYPE = 1 << 9,
	IBV_DEVICE_PORT_ACTIVE_EVENT = 1 << 10,
	IBV_DEVICE_SYS_IMAGE_GUID = 1 << 11,
	IBV_DEVICE_RC_RNR_NAK_GEN = 1 << 12,
	IBV_DEVICE_SRQ_RESIZE = 1 << 13,
	IBV_DEVICE_N_NOTIFY_CQ = 1 << 14,
	IBV_DEVICE_MEM_WINDOW = 1 << 17,
	IBV_DEVICE_UD_IP_CSUM = 1 << 18,
	IBV_DEVICE_XRC = 1 << 20,
	IBV_DEVICE_MEM_MGT_EXTENSIONS = 1 << 21,
	IBV_DEVICE_MEM_WINDOW_TYPE_2A = 1 << 23,
	IBV_DEVICE_MEM_WINDOW_TYPE_2B = 1 << 24,
	IBV_DEVICE_RC_IP_CSUM = 1 << 25,
	IBV_DEVICE_RAW_IP_CSUM = 1 << 26,
	IBV_DEVICE_MANAGED_FLOW_STEERING = 1 << 29,
};

enum ibv_atomic_cap {
	IBV_ATOMIC_NONE,
	IBV_ATOMIC_HCA,
	IBV_ATOMIC_GLOB,
};

/* Device limits and identity, filled by ibv_query_device(). */
struct ibv_device_attr {
	char fw_ver[64];
	__be64 node_guid;
	__be64 sys_image_guid;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;
	int max_qp_wr;
	unsigned int device_cap_flags; /* enum ibv_device_cap_flags */
	int max_sge;
	int max_sge_rd;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_pd;
	int max_qp_rd_atom;
	int max_ee_rd_atom;
	int max_res_rd_atom;
	int max_qp_init_rd_atom;
	int max_ee_init_rd_atom;
	enum ibv_atomic_cap atomic_cap;
	int max_ee;
	int max_rdd;
	int max_mw;
	int max_raw_ipv6_qp;
	int max_raw_ethy_qp;
	int max_mcast_grp;
	int max_mcast_qp_attach;
	int max_total_mcast_qp_attach;
	int max_ah;
	int max_fmr;
	int max_map_per_fmr;
	int max_srq;
	int max_srq_wr;
	int max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
};

/* Input of ibv_query_device_ex(); no comp_mask bit is defined yet. */
struct ibv_query_device_ex_input {
	uint32_t comp_mask;
};

/* On-demand paging capabilities (none on umcast). */
struct ibv_odp_caps {
	uint64_t general_caps;
	struct {
		uint32_t rc_odp_caps;
		uint32_t uc_odp_caps;
		uint32_t ud_odp_caps;
	} per_transport_caps;
};

/* TCP segmentation offload capabilities (none on umcast). */
struct ibv_tso_caps {
	uint32_t max_tso;
	uint32_t supported_qpts; /* bit (1 << enum ibv_qp_type) per QP type */
};

/* Receive-side scaling capabilities (none on umcast). */
struct ibv_rss_caps {
	uint32_t supported_qpts;
	uint32_t max_rwq_indirection_tables;
	uint32_t max_rwq_indirection_table_size;
	uint64_t rx_hash_fields_mask;
	uint8_t rx_hash_function;
};

/* Send rate limiting per QP, in kbit/s (none on umcast). */
struct ibv_packet_pacing_caps {
	uint32_t qp_rate_limit_min;
	uint32_t qp_rate_limit_max;
	uint32_t supported_qpts;
};

/* Tag matching capabilities (none on umcast). */
struct ibv_tm_caps {
	uint32_t max_rndv_hdr_size;
	uint32_t max_num_tags;
	uint32_t flags;
	uint32_t max_ops;
	uint32_t max_sge;
};

/* CQ moderation limits: completions and microseconds (none on umcast). */
struct ibv_cq_moderation_caps {
	uint16_t max_cq_count;
	uint16_t max_cq_period;
};

/* PCIe atomic operand sizes per operation (none on umcast). */
struct ibv_pci_atomic_caps {
	uint16_t fetch_add;
	uint16_t swap;
	uint16_t compare_swap;
};

/*
 * Extended device attributes, filled by ibv_query_device_ex(): the classic
 * attributes, then capabilities of features umcast does not have (zero).
 */
struct ibv_device_attr_ex {
	struct ibv_device_attr orig_attr;
	uint32_t comp_mask;
	struct ibv_odp_caps odp_caps;
	uint64_t completion_timestamp_mask;
	uint64_t hca_core_clock; /* kHz */
	uint64_t device_cap_flags_ex; /* device_cap_flags and bits above 31 */
	struct ibv_tso_caps tso_caps;
	struct ibv_rss_caps rss_caps;
	uint32_t max_wq_type_rq;
	struct ibv_packet_pacing_caps packet_pacing_caps;
	uint32_t raw_packet_caps;
	struct ibv_tm_caps tm_caps;
	struct ibv_cq_moderation_caps cq_mod_caps;
	uint64_t max_dm_size;
	struct ibv_pci_atomic_caps pci_atomic_caps;
	uint32_t xrc_odp_caps;
	uint32_t phys_port_cnt_ex;
};

/* Path MTU codes (IBA 7.7.9): bytes = 1 << (code + 7). */
enum ibv_mtu {
	IBV_MTU_256 = 1,
	IBV_MTU_512 = 2,
	IBV_MTU_1024 = 3,
	IBV_MTU_2048 = 4,
	IBV_MTU_4096 = 5,
};

enum ibv_port_state {
	IBV_PORT_NOP = 0,
	IBV_PORT_DOWN = 1,
	IBV_PORT_INIT = 2,
	IBV_PORT_ARMED = 3,
	IBV_PORT_ACTIVE = 4,
	IBV_PORT_ACTIVE_DEFER = 5,
};

/* Values of ibv_port_attr.link_layer. */
enum {
	IBV_LINK_LAYER_UNSPECIFIED,
	IBV_LINK_LAYER_INFINIBAND,
	IBV_LINK_LAYER_ETHERNET,
};

/* Bits of ibv_port_attr.port_cap_flags (IBA PortInfo:CapabilityMask). */
enum ibv_port_cap_flags {
	IBV_PORT_SM = 1 << 1,
	IBV_PORT_NOTICE_SUP = 1 << 2,
	IBV_PORT_TRAP_SUP = 1 << 3,
	IBV_PORT_OPT_IPD_SUP = 1 << 4,
	IBV_PORT_AUTO_MIGR_SUP = 1 << 5,
	IBV_PORT_SL_MAP_SUP = 1 << 6,
	IBV_PORT_MKEY_NVRAM = 1 << 7,
	IBV_PORT_PKEY_NVRAM = 1 << 8,
	IBV_PORT_LED_INFO_SUP = 1 << 9,
	IBV_PORT_SYS_IMAGE_GUID_SUP = 1 << 11,
	IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP = 1 << 12,
	IBV_PORT_EXTENDED_SPEEDS_SUP = 1 << 14,
	IBV_PORT_CAP_MASK2_SUP = 1 << 15,
	IBV_PORT_CM_SUP = 1 << 16,
	IBV_PORT_SNMP_TUNNEL_SUP = 1 << 17,
	IBV_PORT_REINIT_SUP = 1 << 18,
	IBV_PORT_DEVICE_MGMT_SUP = 1 << 19,
	IBV_PORT_VENDOR_CLASS_SUP = 1 << 20,
	IBV_PORT_DR_NOTICE_SUP = 1 << 21,
	IBV_PORT_CAP_MASK_NOTICE_SUP = 1 << 22,
	IBV_PORT_BOOT_MGMT_SUP = 1 << 23,
	IBV_PORT_LINK_LATENCY_SUP = 1 << 24,
	IBV_PORT_CLIENT_REG_SUP = 1 << 25,
	IBV_PORT_IP_BASED_GIDS = 1 << 26,
};

/* Port attributes, filled by ibv_query_port(). */
struct ibv_port_attr {
	enum ibv_port_state state;
	enum ibv_mtu max_mtu;
	enum ibv_mtu active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer; /* IBV_LINK_LAYER_* */
	uint8_t flags;
	uint16_t port_cap_flags2;
};

/* ------------------------------------------------------------------------- */
/* Work completions                                                          */

enum ibv_wc_status {
	IBV_WC_SUCCESS,
	IBV_WC_LOC_LEN_ERR,
	IBV_WC_LOC_QP_OP_ERR,
	IBV_WC_LOC_EEC_OP_ERR,
	IBV_WC_LOC_PROT_ERR,
	IBV_WC_WR_FLUSH_ERR,
	IBV_WC_MW_BIND_ERR,
	IBV_WC_BAD_RESP_ERR,
	IBV_WC_LOC_ACCESS_ERR,
	IBV_WC_REM_INV_REQ_ERR,
	IBV_WC_REM_ACCESS_ERR,
	IBV_WC_REM_OP_ERR,
	IBV_WC_RETRY_EXC_ERR,
	IBV_WC_RNR_RETRY_EXC_ERR,
	IBV_WC_LOC_RDD_VIOL_ERR,
	IBV_WC_REM_INV_RD_REQ_ERR,
	IBV_WC_REM_ABORT_ERR,
	IBV_WC_INV_EECN_ERR,
	IBV_WC_INV_EEC_STATE_ERR,
	IBV_WC_FATAL_ERR,
	IBV_WC_RESP_TIMEOUT_ERR,
	IBV_WC_GENERAL_ERR,
	IBV_WC_TM_ERR,
	IBV_WC_TM_RNDV_INCOMPLETE,
};

/*
 * Receive opcodes start at bit 7, so (opcode & IBV_WC_RECV) tells a receive
 * completion from a send-side one.
 */
enum ibv_wc_opcode {
	IBV_WC_SEND,
	IBV_WC_RDMA_WRITE,
	IBV_WC_RDMA_READ,
	IBV_WC_COMP_SWAP,
	IBV_WC_FETCH_ADD,
	IBV_WC_BIND_MW,
	IBV_WC_LOCAL_INV,
	IBV_WC_TSO,
	IBV_WC_FLUSH,
	IBV_WC_ATOMIC_WRITE = 9,
	IBV_WC_RECV = 1 << 7,
	IBV_WC_RECV_RDMA_WITH_IMM,
	IBV_WC_TM_ADD,
	IBV_WC_TM_DEL,
	IBV_WC_TM_SYNC,
	IBV_WC_TM_RECV,
	IBV_WC_TM_NO_TAG,
	IBV_WC_DRIVER1,
	IBV_WC_DRIVER2,
	IBV_WC_DRIVER3,
};

enum {
	IBV_WC_IP_CSUM_OK_SHIFT = 2,
};

/* Bits of ibv_wc.wc_flags. */
enum ibv_wc_flags {
	IBV_WC_GRH = 1 << 0,	 /* the first 40 bytes of the buffer hold a GRH */
	IBV_WC_WITH_IMM = 1 << 1, /* imm_data is valid */
	IBV_WC_IP_CSUM_OK = 1 << IBV_WC_IP_CSUM_OK_SHIFT,
	IBV_WC_WITH_INV = 1 << 3,
	IBV_WC_TM_SYNC_REQ = 1 << 4,
	IBV_WC_TM_MATCH = 1 << 5,
	IBV_WC_TM_DATA_VALID = 1 << 6,
};

/*
 * One work completion.  For a UD receive: byte_len counts the 40-byte GRH
 * area plus the payload, src_qp is the sender's QPN, slid/sl its LID and SL,
 * and wc_flags has IBV_WC_GRH when a GRH was placed in the buffer.
 */
struct ibv_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	union {
		__be32 imm_data;	   /* IBV_WC_WITH_IMM: network byte order */
		uint32_t invalidated_rkey; /* IBV_WC_WITH_INV */
	};
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags; /* enum ibv_wc_flags */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/* ------------------------------------------------------------------------- */
/* Protection domains and memory regions                                     */

enum ibv_access_flags {
	IBV_ACCESS_LOCAL_WRITE = 1,
	IBV_ACCESS_REMOTE_WRITE = 1 << 1,
	IBV_ACCESS_REMOTE_READ = 1 << 2,
	IBV_ACCESS_REMOTE_ATOMIC = 1 << 3,
	IBV_ACCESS_MW_BIND = 1 << 4,
	IBV_ACCESS_ZERO_BASED = 1 << 5,
	IBV_ACCESS_ON_DEMAND = 1 << 6,
	IBV_ACCESS_HUGETLB = 1 << 7,
	IBV_ACCESS_FLUSH_GLOBAL = 1 << 8,
	IBV_ACCESS_FLUSH_PERSISTENT = 1 << 9,
	IBV_ACCESS_RELAXED_ORDERING = 1 << 20, /* first of the "optional" bits */
};

struct ibv_pd {
	struct ibv_context *context;
	uint32_t handle;
};

struct ibv_mr {
	struct ibv_context *context;
	struct ibv_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey; /* goes in ibv_sge.lkey */
	uint32_t rkey;
};

/* Memory-window binding description (part of the ibv_send_wr layout only). */
struct ibv_mw_bind_info {
	struct ibv_mr *mr;
	uint64_t addr;
	uint64_t length;
	unsigned int mw_access_flags; /* enum ibv_access_flags */
};

/* ------------------------------------------------------------------------- */
/* Addressing                                                                */

/* Global routing part of an address vector (IBA 8.3). */
struct ibv_global_route {
	union ibv_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

/*
 * The Global Route Header as found in the first 40 bytes of a UD receive
 * buffer (IBA 8.3.1), all fields in network byte order.  On RoCEv2 it is the
 * IPv6 header, or the IPv4 header in the last 20 bytes.
 */
struct ibv_grh {
	__be32 version_tclass_flow;
	__be16 paylen;
	uint8_t next_hdr;
	uint8_t hop_limit;
	union ibv_gid sgid;
	union ibv_gid dgid;
};

UMC_ABI_ASSERT(sizeof(struct ibv_grh) == 40, "the GRH is 40 bytes on the wire");

/* Static rate codes (IBA 9.11.1), for ibv_ah_attr.static_rate. */
enum ibv_rate {
	IBV_RATE_MAX = 0,
	IBV_RATE_2_5_GBPS = 2,
	IBV_RATE_5_GBPS = 5,
	IBV_RATE_10_GBPS = 3,
	IBV_RATE_20_GBPS = 6,
	IBV_RATE_30_GBPS = 4,
	IBV_RATE_40_GBPS = 7,
	IBV_RATE_60_GBPS = 8,
	IBV_RATE_80_GBPS = 9,
	IBV_RATE_120_GBPS = 10,
	IBV_RATE_14_GBPS = 11,
	IBV_RATE_56_GBPS = 12,
	IBV_RATE_112_GBPS = 13,
	IBV_RATE_168_GBPS = 14,
	IBV_RATE_25_GBPS = 15,
	IBV_RATE_100_GBPS = 16,
	IBV_RATE_200_GBPS = 17,
	IBV_RATE_300_GBPS = 18,
	IBV_RATE_28_GBPS = 19,
	IBV_RATE_50_GBPS = 20,
	IBV_RATE_400_GBPS = 21,
	IBV_RATE_600_GBPS = 22,
	IBV_RATE_800_GBPS = 23,
	IBV_RATE_1200_GBPS = 24,
};

/* Address vector: what an AH is created from.  dlid is host byte order. */
struct ibv_ah_attr {
	struct ibv_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate; /* enum ibv_rate */
	uint8_t is_global;   /* grh is valid (always 1 on RoCE) */
	uint8_t port_num;
};

struct ibv_ah {
	struct ibv_context *context;
	struct ibv_pd *pd;
	uint32_t handle;
};

/* ------------------------------------------------------------------------- */
/* Queue pairs                                                               */

enum ibv_qp_type {
	IBV_QPT_RC = 2,
	IBV_QPT_UC,
	IBV_QPT_UD,
	IBV_QPT_RAW_PACKET = 8,
	IBV_QPT_XRC_SEND = 9,
	IBV_QPT_XRC_RECV,
	IBV_QPT_DRIVER = 0xff,
};

/* Queue sizes; ibv_create_qp() writes back the sizes actually granted. */
struct ibv_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct ibv_qp_init_attr {
	void *qp_context;
	struct ibv_cq *send_cq;
	struct ibv_cq *recv_cq;
	struct ibv_srq *srq;
	struct ibv_qp_cap cap;
	enum ibv_qp_type qp_type;
	int sq_sig_all; /* non-zero: every send WR generates a completion */
};

/* Bits of ibv_qp_init_attr_ex.comp_mask: which extended fields are valid. */
enum ibv_qp_init_attr_mask {
	IBV_QP_INIT_ATTR_PD = 1 << 0,
	IBV_QP_INIT_ATTR_XRCD = 1 << 1,
	IBV_QP_INIT_ATTR_CREATE_FLAGS = 1 << 2,
	IBV_QP_INIT_ATTR_MAX_TSO_HEADER = 1 << 3,
	IBV_QP_INIT_ATTR_IND_TABLE = 1 << 4,
	IBV_QP_INIT_ATTR_RX_HASH = 1 << 5,
	IBV_QP_INIT_ATTR_SEND_OPS_FLAGS = 1 << 6,
};

/* Bits of ibv_qp_init_attr_ex.create_flags. */
enum ibv_qp_create_flags {
	/* Do not deliver this QP's own multicast sends back to it. */
	IBV_QP_CREATE_BLOCK_SELF_MCAST_LB = 1 << 1,
	IBV_QP_CREATE_SCATTER_FCS = 1 << 8,
	IBV_QP_CREATE_CVLAN_STRIPPING = 1 << 9,
	IBV_QP_CREATE_SOURCE_QPN = 1 << 10,
	IBV_QP_CREATE_PCI_WRITE_END_PADDING = 1 << 11,
};

/* Receive-side scaling configuration (layout only; not supported). */
struct ibv_rx_hash_conf {
	uint8_t rx_hash_function;
	uint8_t rx_hash_key_len;
	uint8_t *rx_hash_key;
	uint64_t rx_hash_fields_mask;
};

/* ibv_qp_init_attr followed by the extended, comp_mask-selected fields. */
struct ibv_qp_init_attr_ex {
	void *qp_context;
	struct ibv_cq *send_cq;
	struct ibv_cq *recv_cq;
	struct ibv_srq *srq;
	struct ibv_qp_cap cap;
	enum ibv_qp_type qp_type;
	int sq_sig_all;

	uint32_t comp_mask; /* enum ibv_qp_init_attr_mask */
	struct ibv_pd *pd;
	struct ibv_xrcd *xrcd;
	uint32_t create_flags; /* enum ibv_qp_create_flags */
	uint16_t max_tso_header;
	struct ibv_rwq_ind_table *rwq_ind_tbl;
	struct ibv_rx_hash_conf rx_hash_conf;
	uint32_t source_qpn;
	uint64_t send_ops_flags;
};

/* Bits of the attr_mask argument of ibv_modify_qp() / ibv_query_qp(). */
enum ibv_qp_attr_mask {
	IBV_QP_STATE = 1 << 0,
	IBV_QP_CUR_STATE = 1 << 1,
	IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	IBV_QP_ACCESS_FLAGS = 1 << 3,
	IBV_QP_PKEY_INDEX = 1 << 4,
	IBV_QP_PORT = 1 << 5,
	IBV_QP_QKEY = 1 << 6,
	IBV_QP_AV = 1 << 7,
	IBV_QP_PATH_MTU = 1 << 8,
	IBV_QP_TIMEOUT = 1 << 9,
	IBV_QP_RETRY_CNT = 1 << 10,
	IBV_QP_RNR_RETRY = 1 << 11,
	IBV_QP_RQ_PSN = 1 << 12,
	IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	IBV_QP_ALT_PATH = 1 << 14,
	IBV_QP_MIN_RNR_TIMER = 1 << 15,
	IBV_QP_SQ_PSN = 1 << 16,
	IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	IBV_QP_PATH_MIG_STATE = 1 << 18,
	IBV_QP_CAP = 1 << 19,
	IBV_QP_DEST_QPN = 1 << 20,
	/* bits 21..24 are unused */
	IBV_QP_RATE_LIMIT = 1 << 25,
};

enum ibv_qp_state {
	IBV_QPS_RESET,
	IBV_QPS_INIT,
	IBV_QPS_RTR,
	IBV_QPS_RTS,
	IBV_QPS_SQD,
	IBV_QPS_SQE,
	IBV_QPS_ERR,
	IBV_QPS_UNKNOWN,
};

enum ibv_mig_state {
	IBV_MIG_MIGRATED,
	IBV_MIG_REARM,
	IBV_MIG_ARMED,
};

/* QP attributes for ibv_modify_qp() / ibv_query_qp(); attr_mask says which. */
struct ibv_qp_attr {
	enum ibv_qp_state qp_state;
	enum ibv_qp_state cur_qp_state;
	enum ibv_mtu path_mtu;
	enum ibv_mig_state path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct ibv_qp_cap cap;
	struct ibv_ah_attr ah_attr;
	struct ibv_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};

/* ------------------------------------------------------------------------- */
/* Work requests                                                             */

enum ibv_wr_opcode {
	IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM,
	IBV_WR_SEND,
	IBV_WR_SEND_WITH_IMM,
	IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_CMP_AND_SWP,
	IBV_WR_ATOMIC_FETCH_AND_ADD,
	IBV_WR_LOCAL_INV,
	IBV_WR_BIND_MW,
	IBV_WR_SEND_WITH_INV,
	IBV_WR_TSO,
	IBV_WR_DRIVER1,
	IBV_WR_FLUSH = 14,
	IBV_WR_ATOMIC_WRITE = 15,
};

/* Bits of ibv_send_wr.send_flags. */
enum ibv_send_flags {
	IBV_SEND_FENCE = 1 << 0,
	IBV_SEND_SIGNALED = 1 << 1,  /* generate a completion for this WR */
	IBV_SEND_SOLICITED = 1 << 2, /* set BTH.SE */
	IBV_SEND_INLINE = 1 << 3,    /* data copied at post time; lkey ignored */
	IBV_SEND_IP_CSUM = 1 << 4,
};

/* One scatter/gather element: addr is a virtual address inside an MR. */
struct ibv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/*
 * A send work request.  For UD only wr.ud is used: the AH of the
 * destination, its QPN (0xFFFFFF for multicast) and its Q_Key.
 */
struct ibv_send_wr {
	uint64_t wr_id;
	struct ibv_send_wr *next;
	struct ibv_sge *sg_list;
	int num_sge;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags; /* enum ibv_send_flags */
	union {
		__be32 imm_data;	  /* *_WITH_IMM: network byte order */
		uint32_t invalidate_rkey; /* *_WITH_INV */
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct ibv_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
	union {
		struct {
			uint32_t remote_srqn;
		} xrc;
	} qp_type;
	union {
		struct {
			struct ibv_mw *mw;
			uint32_t rkey;
			struct ibv_mw_bind_info bind_info;
		} bind_mw;
		struct {
			void *hdr;
			uint16_t hdr_sz;
			uint16_t mss;
		} tso;
	};
};

/* A receive work request.  On UD the first 40 bytes receive the GRH. */
struct ibv_recv_wr {
	uint64_t wr_id;
	struct ibv_recv_wr *next;
	struct ibv_sge *sg_list;
	int num_sge;
};

/* ------------------------------------------------------------------------- */
/* Objects                                                                   */

struct ibv_qp {
	struct ibv_context *context;
	void *qp_context;
	struct ibv_pd *pd;
	struct ibv_cq *send_cq;
	struct ibv_cq *recv_cq;
	struct ibv_srq *srq;
	uint32_t handle;
	uint32_t qp_num;
	enum ibv_qp_state state;
	enum ibv_qp_type qp_type;

	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
};

/* A completion channel: fd is readable (poll(2)) when a CQ event is queued. */
struct ibv_comp_channel {
	struct ibv_context *context;
	int fd;
	int refcnt;
};

struct ibv_cq {
	struct ibv_context *context;
	struct ibv_comp_channel *channel;
	void *cq_context;
	uint32_t handle;
	int cqe; /* capacity actually allocated */

	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t comp_events_completed;
	uint32_t async_events_completed;
};

enum {
	IBV_SYSFS_NAME_MAX = 64,
	IBV_SYSFS_PATH_MAX = 256,
};

/* Two obsolete driver entry points; kept for the layout, always NULL. */
struct _ibv_device_ops {
	struct ibv_context *(*_dummy1)(struct ibv_device *device, int cmd_fd);
	void (*_dummy2)(struct ibv_context *context);
};

/* An RDMA device as listed by ibv_get_device_list(). */
struct ibv_device {
	struct _ibv_device_ops _ops;
	enum ibv_node_type node_type;
	enum ibv_transport_type transport_type;
	char name[IBV_SYSFS_NAME_MAX];	      /* device name, ibv_get_device_name() */
	char dev_name[IBV_SYSFS_NAME_MAX];    /* name of the (virtual) uverbs node */
	char dev_path[IBV_SYSFS_PATH_MAX];    /* path of that node, may be empty */
	char ibdev_path[IBV_SYSFS_PATH_MAX]; /* path of the device, may be empty */
};

/* Memory window types (ibv_alloc_mw(3); not supported by umcast). */
enum ibv_mw_type {
	IBV_MW_TYPE_1 = 1,
	IBV_MW_TYPE_2 = 2,
};

/* Advice values of ibv_advise_mr(3) (not supported by umcast). */
enum ibv_advise_mr_advice {
	IBV_ADVISE_MR_ADVICE_PREFETCH,
	IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
	IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
};

/*
 * The original operations table of a context: 32 slots.  Programs call the
 * data-path slots (poll_cq, req_notify_cq, post_send, post_recv) through the
 * inline functions below, and memory-window and SRQ inlines use alloc_mw,
 * bind_mw, dealloc_mw and post_srq_recv.  The _compat_ slots are only read
 * by programs built against libibverbs 1.1 and older; of those, umcast fills
 * _compat_query_device and _compat_query_port (with ibv_query_device() and
 * ibv_query_port(), as libibverbs does) and leaves the others NULL.
 */
struct ibv_context_ops {
	int (*_compat_query_device)(struct ibv_context *context,
				    struct ibv_device_attr *device_attr);
	int (*_compat_query_port)(struct ibv_context *context, uint8_t port_num,
				  struct _compat_ibv_port_attr *port_attr);
	void *(*_compat_alloc_pd)(void);
	void *(*_compat_dealloc_pd)(void);
	void *(*_compat_reg_mr)(void);
	void *(*_compat_rereg_mr)(void);
	void *(*_compat_dereg_mr)(void);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
	int (*dealloc_mw)(struct ibv_mw *mw);
	void *(*_compat_create_cq)(void);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	void *(*_compat_cq_event)(void);
	void *(*_compat_resize_cq)(void);
	void *(*_compat_destroy_cq)(void);
	void *(*_compat_create_srq)(void);
	void *(*_compat_modify_srq)(void);
	void *(*_compat_query_srq)(void);
	void *(*_compat_destroy_srq)(void);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	void *(*_compat_create_qp)(void);
	void *(*_compat_query_qp)(void);
	void *(*_compat_modify_qp)(void);
	void *(*_compat_destroy_qp)(void);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	void *(*_compat_create_ah)(void);
	void *(*_compat_destroy_ah)(void);
	void *(*_compat_attach_mcast)(void);
	void *(*_compat_detach_mcast)(void);
	void *(*_compat_async_event)(void);
};

/*
 * An open device.  Every context umcast opens is the last member of a
 * struct verbs_context, and abi_compat says so (__VERBS_ABI_IS_EXTENDED).
 */
struct ibv_context {
	struct ibv_device *device;
	struct ibv_context_ops ops;
	int cmd_fd;	      /* -1: umcast has no kernel command channel */
	int async_fd;	      /* -1: no asynchronous events */
	int num_comp_vectors; /* 1 */
	pthread_mutex_t mutex;
	void *abi_compat;     /* __VERBS_ABI_IS_EXTENDED */
};

/* The value of ibv_context.abi_compat when a struct verbs_context precedes it. */
#define __VERBS_ABI_IS_EXTENDED ((void *)UINTPTR_MAX)

/*
 * The extended part of a context, laid out in memory just before the
 * struct ibv_context it ends with.  New slots were added at the top over
 * time, so a slot at offset O exists when sz >= sizeof(struct verbs_context)
 * - O (verbs_get_ctx_op()).  umcast fills every slot: query_port,
 * query_device_ex and create_qp_ex work, the others fail with EOPNOTSUPP.
 * The two ABI_placeholder slots repeat the flow slots for programs built
 * against libibverbs 1.1.8.
 */
struct verbs_context {
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr, size_t port_attr_len);
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
			 struct ibv_sge *sg_list, uint32_t num_sges);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	int (*read_counters)(struct ibv_counters *counters, uint64_t *counters_value,
			     uint32_t ncounters, uint32_t flags);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	struct ibv_counters *(*create_counters)(struct ibv_context *context,
						struct ibv_counters_init_attr *init_attr);
	int (*destroy_counters)(struct ibv_counters *counters);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t dm_offset,
				    size_t length, unsigned int access);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context, struct ibv_alloc_dm_attr *attr);
	int (*free_dm)(struct ibv_dm *dm);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	struct ibv_flow_action *(*create_flow_action_esp)(struct ibv_context *context,
							  struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr);
	struct ibv_pd *(*alloc_parent_domain)(struct ibv_context *context,
					      struct ibv_parent_domain_init_attr *attr);
	int (*dealloc_td)(struct ibv_td *td);
	struct ibv_td *(*alloc_td)(struct ibv_context *context, struct ibv_td_init_attr *init_attr);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad_op);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(struct ibv_context *context,
							  struct ibv_rwq_ind_table_init_attr *init_attr);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*query_rt_values)(struct ibv_context *context, struct ibv_values_ex *values);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct verbs_ex_private *priv; /* NULL: umcast keeps its state elsewhere */
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);
	int (*ibv_destroy_flow)(struct ibv_flow *flow);
	void (*ABI_placeholder2)(void);
	struct ibv_flow *(*ibv_create_flow)(struct ibv_qp *qp, struct ibv_flow_attr *flow_attr);
	void (*ABI_placeholder1)(void);
	struct ibv_qp *(*open_qp)(struct ibv_context *context, struct ibv_qp_open_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	uint64_t _ABI_placeholder3;
	size_t sz;		    /* sizeof(struct verbs_context) of the library */
	struct ibv_context context; /* always last */
};

/*
 * verbs_get_ctx - the struct verbs_context around @ctx, or NULL when @ctx
 * is not extended (abi_compat is not __VERBS_ABI_IS_EXTENDED).
 */
static inline struct verbs_context *verbs_get_ctx(struct ibv_context *ctx)
{
	if (ctx->abi_compat != __VERBS_ABI_IS_EXTENDED)
		return NULL;
	return (struct verbs_context *)((uint8_t *)ctx - offsetof(struct verbs_context, context));
}

/*
 * umc_verbs_ctx_op - helper of verbs_get_ctx_op(): the extended context of
 * @ctx if its library's verbs_context reaches the slot at offset @off and
 * that slot is set, else NULL.
 */
static inline struct verbs_context *umc_verbs_ctx_op(struct ibv_context *ctx, size_t off)
{
	struct verbs_context *vctx = verbs_get_ctx(ctx);
	void (*slot)(void);

	if (!vctx || vctx->sz < sizeof(*vctx) - off)
		return NULL;
	memcpy(&slot, (const uint8_t *)vctx + off, sizeof(slot));
	return slot ? vctx : NULL;
}

/*
 * verbs_get_ctx_op - the extended context of @ctx when slot @op (a member
 * of struct verbs_context) can be called, else NULL.
 */
#define verbs_get_ctx_op(ctx, op) umc_verbs_ctx_op(ctx, offsetof(struct verbs_context, op))

/* ------------------------------------------------------------------------- */
/* Devices and contexts                                                      */

/*
 * ibv_get_device_list - the RDMA devices of this process: one per network
 * interface that is up and has an IP address (RoCEv2), plus the simulated IB
 * device when an SM is configured.  The array is NULL-terminated; if
 * @num_devices is not NULL it receives the count (0 is not an error).
 * Free with ibv_free_device_list().
 * Returns the array, or NULL with errno set (ENOMEM).  ibv_get_device_list(3)
 */
struct ibv_device **ibv_get_device_list(int *num_devices);

/*
 * ibv_free_device_list - free an array from ibv_get_device_list().  Devices
 * already opened stay valid; unopened ones must no longer be used.
 * ibv_get_device_list(3)
 */
void ibv_free_device_list(struct ibv_device **list);

/*
 * ibv_get_device_name - the device's name (its ibv_device.name), valid as long
 * as the device.  Returns NULL if @device is NULL.  ibv_get_device_name(3)
 */
const char *ibv_get_device_name(struct ibv_device *device);

/*
 * ibv_get_device_guid - the device's node GUID, network byte order.
 * Returns 0 on failure.  ibv_get_device_guid(3)
 */
__be64 ibv_get_device_guid(struct ibv_device *device);

/*
 * ibv_open_device - open a context on @device; its ops are filled in.
 * Returns the context, or NULL with errno set (ENOMEM, ENODEV: the interface
 * went away).  ibv_open_device(3)
 */
struct ibv_context *ibv_open_device(struct ibv_device *device);

/*
 * ibv_close_device - close a context.  Objects created on it should have been
 * destroyed first; they are not released by this call.
 * Returns 0, or -1 with errno set.  ibv_open_device(3)
 */
int ibv_close_device(struct ibv_context *context);

/*
 * ibv_query_device - fill @device_attr with the device's limits (rxe's values:
 * max_mcast_grp 8192, max_mcast_qp_attach 56, ...) and identity.
 * Returns 0 or the errno value (EINVAL).  ibv_query_device(3)
 */
int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr);

/*
 * ibv_query_device_ex - fill @attr with the classic attributes
 * (attr->orig_attr, as ibv_query_device()) and the extended ones; on umcast
 * the extended capabilities are all zero and phys_port_cnt_ex is 1.
 * @input: NULL, or with comp_mask 0.  Falls back to ibv_query_device() when
 * the library has no extended query.
 * Returns 0 or the errno value (EINVAL: input->comp_mask not 0).
 * ibv_query_device_ex(3)
 */
static inline int ibv_query_device_ex(struct ibv_context *context,
				      const struct ibv_query_device_ex_input *input,
				      struct ibv_device_attr_ex *attr)
{
	struct verbs_context *vctx;
	int ret;

	if (input && input->comp_mask)
		return EINVAL;
	vctx = verbs_get_ctx_op(context, query_device_ex);
	if (vctx) {
		ret = vctx->query_device_ex(context, input, attr, sizeof(*attr));
		if (ret != EOPNOTSUPP && ret != ENOSYS)
			return ret;
	}
	memset(attr, 0, sizeof(*attr));
	return ibv_query_device(context, &attr->orig_attr);
}

/*
 * ibv_query_port - the exported function behind the ibv_query_port() macro
 * below, for programs built against libibverbs 1.1: it fills the first 48
 * bytes of a struct ibv_port_attr (all fields before port_cap_flags2).
 * Returns 0 or the errno value (EINVAL: bad port).
 */
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr);

/*
 * ibv_query_port - fill @port_attr for port @port_num (ports are numbered
 * from 1; umcast devices have one).  On RoCE, link_layer is
 * IBV_LINK_LAYER_ETHERNET and active_mtu is derived from the interface MTU;
 * on the simulated InfiniBand device, link_layer is _INFINIBAND and the
 * state, LID, SM LID and MTU are what umc-sm registered (INIT and LID 0
 * while it has not answered).  The
 * call goes through the context's query_port slot with the caller's
 * sizeof(struct ibv_port_attr), so the library writes no more than that.
 * Returns 0 or the errno value (EINVAL: bad port).  ibv_query_port(3)
 */
static inline int ___ibv_query_port(struct ibv_context *context, uint8_t port_num,
				    struct ibv_port_attr *port_attr)
{
	struct verbs_context *vctx = verbs_get_ctx_op(context, query_port);

	if (!vctx) {
		memset(port_attr, 0, sizeof(*port_attr));
		return ibv_query_port(context, port_num, (struct _compat_ibv_port_attr *)port_attr);
	}
	return vctx->query_port(context, port_num, port_attr, sizeof(*port_attr));
}

#define ibv_query_port(context, port_num, port_attr) ___ibv_query_port(context, port_num, port_attr)

/*
 * ibv_query_gid - read entry @index of port @port_num's GID table into @gid.
 * On RoCE, index 0 is the interface's address (IPv4-mapped or IPv6); on
 * InfiniBand, the subnet prefix and the port GUID.
 * Returns 0, or -1 with errno set (EINVAL: bad port or index).
 * ibv_query_gid(3)
 */
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid);

/*
 * ibv_query_pkey - read entry @index of port @port_num's P_Key table into
 * @pkey, network byte order.  Returns 0, or -1 with errno set (EINVAL).
 * ibv_query_pkey(3)
 */
int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey);

/*
 * ibv_get_pkey_index - the index of P_Key @pkey (network byte order) in port
 * @port_num's table.  Returns the index, or -1 with errno set (ENOENT: not in
 * the table, EINVAL: bad port).  ibv_get_pkey_index(3)
 */
int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey);

/* ------------------------------------------------------------------------- */
/* PD and MR                                                                 */

/*
 * ibv_alloc_pd - allocate a protection domain.
 * Returns the PD, or NULL with errno set (ENOMEM).  ibv_alloc_pd(3)
 */
struct ibv_pd *ibv_alloc_pd(struct ibv_context *context);

/*
 * ibv_dealloc_pd - free a PD.  Fails while MRs, QPs or AHs still use it.
 * Returns 0 or the errno value (EBUSY).  ibv_alloc_pd(3)
 */
int ibv_dealloc_pd(struct ibv_pd *pd);

/*
 * ibv_reg_mr - register [@addr, @addr + @length) bytes with @pd for the access
 * rights @access (enum ibv_access_flags; IBV_ACCESS_LOCAL_WRITE is required
 * for receive buffers).  The memory is not pinned or copied: it must stay
 * mapped until ibv_dereg_mr().  A receive whose MR is deregistered before a
 * datagram reaches it completes with IBV_WC_LOC_PROT_ERR, writing nothing.
 * Returns the MR (lkey/rkey filled), or NULL with errno set (EINVAL: bad
 * flags, a range that wraps or covers no page; EFAULT: memory not mapped,
 * or not writable with a write access flag, as Linux; ENOMEM: out of MR
 * slots).  ibv_reg_mr(3)
 */
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);

/*
 * ibv_dereg_mr - release an MR; its lkey becomes invalid at once, and once
 * this returns nothing writes into its memory any more.
 * Returns 0 or the errno value (EINVAL).  ibv_reg_mr(3)
 */
int ibv_dereg_mr(struct ibv_mr *mr);

/* ------------------------------------------------------------------------- */
/* Completion channels and CQs                                               */

/*
 * ibv_create_comp_channel - create a completion channel; its fd works with
 * poll(2)/epoll and is readable exactly while at least one CQ event is
 * queued on the channel, for any number of CQs and events.
 * Returns the channel, or NULL with errno set (ENOMEM, EMFILE).
 * ibv_create_comp_channel(3)
 */
struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context);

/*
 * ibv_destroy_comp_channel - destroy a channel.  Fails while CQs use it.
 * Returns 0 or the errno value (EBUSY).  ibv_create_comp_channel(3)
 */
int ibv_destroy_comp_channel(struct ibv_comp_channel *channel);

/*
 * ibv_create_cq - create a CQ of at least @cqe entries (cq->cqe gets the
 * actual size).  @cq_context is returned by ibv_get_cq_event(); @channel may
 * be NULL when events are not used; @comp_vector must be in
 * [0, context->num_comp_vectors).
 * Returns the CQ, or NULL with errno set (EINVAL: cqe < 1 or above
 * max_cqe, bad comp_vector; ENOMEM).  ibv_create_cq(3)
 */
struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector);

/*
 * ibv_destroy_cq - destroy a CQ.  Fails while a QP uses it, and while an
 * event ibv_get_cq_event() returned for it is not acked (libibverbs waits
 * for the ack instead; umcast never blocks a destroy).
 * Returns 0 or the errno value (EBUSY).  ibv_create_cq(3)
 */
int ibv_destroy_cq(struct ibv_cq *cq);

/*
 * ibv_get_cq_event - wait for the next completion event on @channel (blocks
 * unless channel->fd is O_NONBLOCK) and return its CQ and that CQ's
 * cq_context.  The CQ is disarmed: call ibv_req_notify_cq() again for the
 * next event.  Each event must be acked with ibv_ack_cq_events().
 * Returns 0, or -1 with errno set (EAGAIN: non-blocking and none queued,
 * EINTR).  ibv_get_cq_event(3)
 */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context);

/*
 * ibv_ack_cq_events - acknowledge @nevents events of @cq returned by
 * ibv_get_cq_event().  ibv_get_cq_event(3)
 */
void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents);

/*
 * ibv_poll_cq - remove up to @num_entries completions from @cq into @wc,
 * oldest first, without blocking.  When the CQ is empty it first processes
 * the datagrams waiting for the device on the calling thread (a background
 * thread per device does it while no application thread does).  Reaping a
 * completion frees its WR's slot in the QP's queue.
 * Returns the number of completions (0..num_entries; fewer than num_entries
 * means the CQ was empty), or a negative value on error (umcast: the
 * negated errno, -EIO for the parent's CQ in a child of fork).
 * ibv_poll_cq(3)
 */
static inline int ibv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return cq->context->ops.poll_cq(cq, num_entries, wc);
}

/*
 * ibv_req_notify_cq - arm @cq: the next completion added to it (the next
 * solicited one if @solicited_only) queues one event on its channel.
 * Returns 0 or the errno value (EINVAL: CQ has no channel).
 * ibv_req_notify_cq(3)
 */
static inline int ibv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return cq->context->ops.req_notify_cq(cq, solicited_only);
}

/* ------------------------------------------------------------------------- */
/* QPs                                                                       */

/*
 * ibv_create_qp - create a QP on @pd in the RESET state.  Only IBV_QPT_UD is
 * supported; srq must be NULL.  attr->cap is updated with the granted sizes:
 * the depths asked for, exactly (a WR keeps its slot until its completion
 * is reaped).
 * Returns the QP (qp_num set), or NULL with errno set (EINVAL: caps above
 * the limits, no PD, CQs missing or of another context; EOPNOTSUPP: another
 * QP type, an SRQ; ENOMEM).
 * ibv_create_qp(3)
 */
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr);

/*
 * ibv_create_qp_ex - as ibv_create_qp() on @context, with the fields selected
 * by attr->comp_mask: IBV_QP_INIT_ATTR_PD (required) and
 * IBV_QP_INIT_ATTR_CREATE_FLAGS (only IBV_QP_CREATE_BLOCK_SELF_MCAST_LB is
 * supported: the QP never receives its own multicast sends).  A comp_mask of
 * IBV_QP_INIT_ATTR_PD alone is ibv_create_qp() on that PD; anything else goes
 * through the context's create_qp_ex slot.
 * Returns the QP, or NULL with errno set (EINVAL; EOPNOTSUPP: other mask bits
 * or create flags, or no create_qp_ex slot; ENOMEM).  ibv_create_qp_ex(3)
 */
static inline struct ibv_qp *ibv_create_qp_ex(struct ibv_context *context,
					      struct ibv_qp_init_attr_ex *qp_init_attr_ex)
{
	struct verbs_context *vctx;

	if (qp_init_attr_ex->comp_mask == IBV_QP_INIT_ATTR_PD)
		return ibv_create_qp(qp_init_attr_ex->pd,
				     (struct ibv_qp_init_attr *)qp_init_attr_ex);
	vctx = verbs_get_ctx_op(context, create_qp_ex);
	if (!vctx) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return vctx->create_qp_ex(context, qp_init_attr_ex);
}

/*
 * ibv_modify_qp - change the attributes named by @attr_mask (enum
 * ibv_qp_attr_mask).  UD: RESET->INIT needs STATE|PKEY_INDEX|PORT|QKEY,
 * INIT->RTR needs STATE, RTR->RTS needs STATE|SQ_PSN; any state may go to
 * RESET or ERR.  On error nothing is changed.
 * Returns 0 or the errno value (EINVAL: bad transition or mask).
 * ibv_modify_qp(3), IBA 10.3.1
 */
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);

/*
 * ibv_query_qp - read the QP's current attributes into @attr (at least those
 * in @attr_mask) and its creation attributes into @init_attr.
 * Returns 0 or the errno value.  ibv_query_qp(3)
 */
int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr);

/*
 * ibv_destroy_qp - destroy a QP.  Fails while it is attached to a multicast
 * group.  Returns 0 or the errno value (EBUSY: still attached).
 * ibv_create_qp(3)
 */
int ibv_destroy_qp(struct ibv_qp *qp);

/*
 * ibv_post_send - queue the chain of send WRs @wr on @qp (RTS).  UD: opcode
 * IBV_WR_SEND or IBV_WR_SEND_WITH_IMM, wr.ud filled, total length at most the
 * path MTU.  In the error state WRs are accepted and complete with
 * IBV_WC_WR_FLUSH_ERR.  On error *@bad_wr points at the first WR not queued.
 * Returns 0 or the errno value (EINVAL: bad WR, QP in RESET, INIT or RTR;
 * ENOMEM: max_send_wr WRs hold their slots, their completions not reaped).
 * ibv_post_send(3)
 */
static inline int ibv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
				struct ibv_send_wr **bad_wr)
{
	return qp->context->ops.post_send(qp, wr, bad_wr);
}

/*
 * ibv_post_recv - queue the chain of receive WRs @wr on @qp (any state but
 * RESET; in the error state they are flushed at once).  UD buffers need 40
 * extra leading bytes for the GRH.  On error *@bad_wr points at the first
 * WR not queued.
 * Returns 0 or the errno value (EINVAL: bad WR or state, ENOMEM: receive
 * queue full: max_recv_wr receives whose completions are not reaped).
 * ibv_post_recv(3)
 */
static inline int ibv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
				struct ibv_recv_wr **bad_wr)
{
	return qp->context->ops.post_recv(qp, wr, bad_wr);
}

/* ------------------------------------------------------------------------- */
/* Address handles                                                           */

/*
 * ibv_create_ah - create an address handle from @attr.  On RoCE is_global
 * must be set and grh.dgid is the destination GID (a multicast GID for a
 * group); on InfiniBand dlid is the destination (an MLID for a group, a
 * unicast LID resolved through the SM once, here) and is_global optional.
 * Returns the AH, or NULL with errno set (EINVAL: bad port or sgid_index,
 * not global on RoCE, DLID 0 or 0xFFFF on InfiniBand; ENOMEM).
 * ibv_create_ah(3)
 */
struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);

/*
 * ibv_destroy_ah - destroy an AH.  Returns 0 or the errno value.
 * ibv_create_ah(3)
 */
int ibv_destroy_ah(struct ibv_ah *ah);

/*
 * ibv_init_ah_from_wc - fill @ah_attr with the address vector that answers
 * the sender of received completion @wc, whose buffer started with @grh
 * (used when wc->wc_flags has IBV_WC_GRH), on port @port_num.
 * Returns 0, or -1 with errno set (EINVAL).  ibv_create_ah_from_wc(3)
 */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr);

/*
 * ibv_create_ah_from_wc - ibv_init_ah_from_wc() then ibv_create_ah() on @pd.
 * Returns the AH, or NULL with errno set.  ibv_create_ah_from_wc(3)
 */
struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num);

/* ------------------------------------------------------------------------- */
/* Multicast                                                                 */

/*
 * ibv_attach_mcast - make UD QP @qp receive datagrams sent to the multicast
 * group @gid (@lid: the MLID, host byte order, >= 0xC000 on IB, ignored on
 * RoCE).  Attaching the same (gid, lid) twice is a no-op.  Does not join the
 * group on the network (that is the CM's join).
 * Returns 0 or the errno value (EINVAL: not UD, non-multicast GID or bad LID;
 * ENOMEM: max_mcast_grp, max_mcast_qp_attach or max_total_mcast_qp_attach
 * reached).  ibv_attach_mcast(3)
 */
int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);

/*
 * ibv_detach_mcast - undo ibv_attach_mcast().  Datagrams already queued
 * may still complete.
 * Returns 0 or the errno value (EINVAL: (gid, lid) not attached to @qp).
 * ibv_attach_mcast(3)
 */
int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);

/* ------------------------------------------------------------------------- */
/* fork                                                                      */

enum ibv_fork_status {
	IBV_FORK_DISABLED,
	IBV_FORK_ENABLED,
	IBV_FORK_UNNEEDED,
};

/*
 * ibv_fork_init - make the library safe for fork(2).  umcast always is (it
 * pins no memory for DMA; a child of fork is a new HCA, umcast(7) FORK), so
 * this does nothing.  Returns 0 (rdma-core: 0 or the errno value).
 * ibv_fork_init(3)
 */
int ibv_fork_init(void);

/*
 * ibv_is_fork_initialized - IBV_FORK_UNNEEDED, whether ibv_fork_init() was
 * called or not.  ibv_is_fork_initialized(3)
 */
enum ibv_fork_status ibv_is_fork_initialized(void);

/* ------------------------------------------------------------------------- */
/* Strings                                                                   */

/*
 * ibv_wc_status_str - a constant English description of @status ("success",
 * "local length error", ...), "unknown" for out-of-range values.  Upstream
 * has no man page for it; the statuses are described in ibv_poll_cq(3).
 */
const char *ibv_wc_status_str(enum ibv_wc_status status);

/*
 * ibv_node_type_str - a constant name for @node_type ("InfiniBand channel
 * adapter", ...), "unknown" otherwise.  ibv_event_type_str(3)
 */
const char *ibv_node_type_str(enum ibv_node_type node_type);

/*
 * ibv_port_state_str - a constant name for @port_state ("down", "active",
 * ...), "unknown" otherwise.  ibv_event_type_str(3)
 */
const char *ibv_port_state_str(enum ibv_port_state port_state);

/* ------------------------------------------------------------------------- */
/* The ABI                                                                   */

/*
 * What compiled code relies on, checked at every build of a program that
 * includes this header.  The ops tables are counted in slots (any
 * platform); the sizes and offsets in bytes are rdma-core 44's on x86-64
 * Linux with glibc.  tests/abi compares every field of every struct with
 * rdma-core's installed header on the build machine.
 */
#define UMC_ABI_SLOT(n) ((n) * sizeof(void (*)(void)))
UMC_ABI_ASSERT(sizeof(struct ibv_context_ops) == UMC_ABI_SLOT(32), "ibv_context_ops: 32 slots");
UMC_ABI_ASSERT(offsetof(struct ibv_context_ops, alloc_mw) == UMC_ABI_SLOT(7), "alloc_mw slot");
UMC_ABI_ASSERT(offsetof(struct ibv_context_ops, poll_cq) == UMC_ABI_SLOT(11), "poll_cq slot");
UMC_ABI_ASSERT(offsetof(struct ibv_context_ops, req_notify_cq) == UMC_ABI_SLOT(12),
	       "req_notify_cq slot");
UMC_ABI_ASSERT(offsetof(struct ibv_context_ops, post_srq_recv) == UMC_ABI_SLOT(20),
	       "post_srq_recv slot");
UMC_ABI_ASSERT(offsetof(struct ibv_context_ops, post_send) == UMC_ABI_SLOT(25), "post_send slot");
UMC_ABI_ASSERT(offsetof(struct ibv_context_ops, post_recv) == UMC_ABI_SLOT(26), "post_recv slot");
UMC_ABI_ASSERT(offsetof(struct verbs_context, query_port) == 0, "verbs_context grows up");
UMC_ABI_ASSERT(offsetof(struct verbs_context, create_cq_ex) == UMC_ABI_SLOT(25), "create_cq_ex");
UMC_ABI_ASSERT(offsetof(struct verbs_context, query_device_ex) == UMC_ABI_SLOT(27),
	       "query_device_ex slot");
UMC_ABI_ASSERT(offsetof(struct verbs_context, create_qp_ex) == UMC_ABI_SLOT(33), "create_qp_ex");
UMC_ABI_ASSERT(offsetof(struct verbs_context, close_xrcd) == UMC_ABI_SLOT(37), "close_xrcd");
UMC_ABI_ASSERT(offsetof(struct verbs_context, sz) + sizeof(size_t) ==
		       offsetof(struct verbs_context, context),
	       "sz just before the context");
UMC_ABI_ASSERT(offsetof(struct verbs_context, context) + sizeof(struct ibv_context) ==
		       sizeof(struct verbs_context),
	       "the context ends the verbs_context");
UMC_ABI_ASSERT(offsetof(struct ibv_device, node_type) == sizeof(struct _ibv_device_ops),
	       "ibv_device starts with the obsolete ops");

#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
UMC_ABI_ASSERT(sizeof(struct ibv_device) == 664, "ibv_device");
UMC_ABI_ASSERT(offsetof(struct ibv_device, name) == 24, "ibv_device.name");
UMC_ABI_ASSERT(offsetof(struct ibv_device, ibdev_path) == 408, "ibv_device.ibdev_path");
UMC_ABI_ASSERT(sizeof(struct ibv_context) == 328, "ibv_context");
UMC_ABI_ASSERT(offsetof(struct ibv_context, ops) + offsetof(struct ibv_context_ops, poll_cq) ==
		       0x60,
	       "context->ops.poll_cq");
UMC_ABI_ASSERT(offsetof(struct ibv_context, ops) +
			       offsetof(struct ibv_context_ops, req_notify_cq) ==
		       0x68,
	       "context->ops.req_notify_cq");
UMC_ABI_ASSERT(offsetof(struct ibv_context, ops) + offsetof(struct ibv_context_ops, post_send) ==
		       0xd0,
	       "context->ops.post_send");
UMC_ABI_ASSERT(offsetof(struct ibv_context, ops) + offsetof(struct ibv_context_ops, post_recv) ==
		       0xd8,
	       "context->ops.post_recv");
UMC_ABI_ASSERT(offsetof(struct ibv_context, cmd_fd) == 264, "ibv_context.cmd_fd");
UMC_ABI_ASSERT(offsetof(struct ibv_context, num_comp_vectors) == 272,
	       "ibv_context.num_comp_vectors");
UMC_ABI_ASSERT(offsetof(struct ibv_context, abi_compat) == 320, "ibv_context.abi_compat");
UMC_ABI_ASSERT(sizeof(struct verbs_context) == 648, "verbs_context");
UMC_ABI_ASSERT(offsetof(struct verbs_context, sz) == 312, "verbs_context.sz");
UMC_ABI_ASSERT(offsetof(struct verbs_context, query_device_ex) == 216,
	       "verbs_context.query_device_ex");
UMC_ABI_ASSERT(offsetof(struct verbs_context, create_qp_ex) == 264, "verbs_context.create_qp_ex");
UMC_ABI_ASSERT(sizeof(struct ibv_port_attr) == 52, "ibv_port_attr");
UMC_ABI_ASSERT(offsetof(struct ibv_port_attr, port_cap_flags2) == 48,
	       "the 48-byte compat port attributes end before port_cap_flags2");
UMC_ABI_ASSERT(offsetof(struct ibv_port_attr, link_layer) == 46, "ibv_port_attr.link_layer");
UMC_ABI_ASSERT(sizeof(struct ibv_device_attr) == 232, "ibv_device_attr");
UMC_ABI_ASSERT(offsetof(struct ibv_device_attr, max_mcast_grp) == 188,
	       "ibv_device_attr.max_mcast_grp");
UMC_ABI_ASSERT(offsetof(struct ibv_device_attr, phys_port_cnt) == 227,
	       "ibv_device_attr.phys_port_cnt");
UMC_ABI_ASSERT(sizeof(struct ibv_device_attr_ex) == 400, "ibv_device_attr_ex");
UMC_ABI_ASSERT(offsetof(struct ibv_device_attr_ex, phys_port_cnt_ex) == 396,
	       "ibv_device_attr_ex.phys_port_cnt_ex");
UMC_ABI_ASSERT(sizeof(struct ibv_wc) == 48, "ibv_wc");
UMC_ABI_ASSERT(offsetof(struct ibv_wc, byte_len) == 20, "ibv_wc.byte_len");
UMC_ABI_ASSERT(offsetof(struct ibv_wc, src_qp) == 32, "ibv_wc.src_qp");
UMC_ABI_ASSERT(offsetof(struct ibv_wc, wc_flags) == 36, "ibv_wc.wc_flags");
UMC_ABI_ASSERT(sizeof(struct ibv_send_wr) == 128, "ibv_send_wr");
UMC_ABI_ASSERT(offsetof(struct ibv_send_wr, wr.ud.ah) == 40, "ibv_send_wr.wr.ud.ah");
UMC_ABI_ASSERT(offsetof(struct ibv_send_wr, wr.ud.remote_qkey) == 52,
	       "ibv_send_wr.wr.ud.remote_qkey");
UMC_ABI_ASSERT(sizeof(struct ibv_recv_wr) == 32, "ibv_recv_wr");
UMC_ABI_ASSERT(sizeof(struct ibv_sge) == 16, "ibv_sge");
UMC_ABI_ASSERT(sizeof(struct ibv_qp) == 160, "ibv_qp");
UMC_ABI_ASSERT(offsetof(struct ibv_qp, qp_num) == 52, "ibv_qp.qp_num");
UMC_ABI_ASSERT(sizeof(struct ibv_cq) == 128, "ibv_cq");
UMC_ABI_ASSERT(offsetof(struct ibv_cq, cq_context) == 16, "ibv_cq.cq_context");
UMC_ABI_ASSERT(sizeof(struct ibv_comp_channel) == 16, "ibv_comp_channel");
UMC_ABI_ASSERT(sizeof(struct ibv_pd) == 16, "ibv_pd");
UMC_ABI_ASSERT(sizeof(struct ibv_mr) == 48, "ibv_mr");
UMC_ABI_ASSERT(offsetof(struct ibv_mr, lkey) == 36, "ibv_mr.lkey");
UMC_ABI_ASSERT(sizeof(struct ibv_ah) == 24, "ibv_ah");
UMC_ABI_ASSERT(sizeof(struct ibv_ah_attr) == 32, "ibv_ah_attr");
UMC_ABI_ASSERT(offsetof(struct ibv_ah_attr, dlid) == 24, "ibv_ah_attr.dlid");
UMC_ABI_ASSERT(sizeof(struct ibv_qp_attr) == 144, "ibv_qp_attr");
UMC_ABI_ASSERT(offsetof(struct ibv_qp_attr, ah_attr) == 56, "ibv_qp_attr.ah_attr");
UMC_ABI_ASSERT(offsetof(struct ibv_qp_attr, port_num) == 129, "ibv_qp_attr.port_num");
UMC_ABI_ASSERT(sizeof(struct ibv_qp_init_attr) == 64, "ibv_qp_init_attr");
UMC_ABI_ASSERT(sizeof(struct ibv_qp_init_attr_ex) == 136, "ibv_qp_init_attr_ex");
UMC_ABI_ASSERT(offsetof(struct ibv_qp_init_attr_ex, comp_mask) == 60,
	       "ibv_qp_init_attr_ex.comp_mask");
UMC_ABI_ASSERT(offsetof(struct ibv_qp_init_attr_ex, create_flags) == 80,
	       "ibv_qp_init_attr_ex.create_flags");
#endif
#ifdef __cplusplus
}
#endif

#endif /* INFINIBAND_VERBS_H */
