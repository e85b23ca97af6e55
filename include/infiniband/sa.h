/* SPDX-License-Identifier: MIT */
/*
 * <infiniband/sa.h> - Subnet Administration record types as seen by verbs and
 * RDMA CM users (IBA 15.2.5), source-compatible with rdma-core.
 *
 * These are the host-side, unpacked forms: multi-byte fields marked __be*
 * are in network byte order, the others in host order.  They are not the
 * wire layout of the SA MADs (umcast's wire codec has that).
 *
 * Only struct ibv_sa_path_rec is used by the CM API (rdma_route.path_rec);
 * umcast never fills a path record for multicast ids (num_paths is 0).
 */
#ifndef INFINIBAND_SA_H
#define INFINIBAND_SA_H

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PathRecord (IBA 15.2.5.16), unpacked. */
struct ibv_sa_path_rec {
	union ibv_gid dgid;
	union ibv_gid sgid;
	__be16 dlid;
	__be16 slid;
	int raw_traffic;
	__be32 flow_label;
	uint8_t hop_limit;
	uint8_t traffic_class;
	int reversible;
	uint8_t numb_path;
	__be16 pkey;
	uint8_t sl;
	uint8_t mtu_selector;
	uint8_t mtu; /* enum ibv_mtu */
	uint8_t rate_selector;
	uint8_t rate; /* enum ibv_rate */
	uint8_t packet_life_time_selector;
	uint8_t packet_life_time;
	uint8_t preference;
};

/* MCMemberRecord (IBA 15.2.5.17), unpacked, host byte order. */
struct ibv_sa_mcmember_rec {
	union ibv_gid mgid;
	union ibv_gid port_gid;
	uint32_t qkey;
	uint16_t mlid;
	uint8_t mtu_selector;
	uint8_t mtu;
	uint8_t traffic_class;
	uint16_t pkey;
	uint8_t rate_selector;
	uint8_t rate;
	uint8_t packet_life_time_selector;
	uint8_t packet_life_time;
	uint8_t sl;
	uint32_t flow_label;
	uint8_t hop_limit;
	uint8_t scope;
	uint8_t join_state; /* bit 0 full, 1 non-member, 2 send-only non-member, 3 send-only full */
	int proxy_join;
};

/* ServiceRecord (IBA 15.2.5.14), unpacked, host byte order. */
struct ibv_sa_service_rec {
	uint64_t id;
	union ibv_gid gid;
	uint16_t pkey;
	uint32_t lease;
	uint8_t key[16];
	uint8_t name[64];
	uint8_t data8[16];
	uint16_t data16[8];
	uint32_t data32[4];
	uint64_t data64[2];
};

/* Bit 7 of ibv_path_record.reversible_numpath. */
#define IBV_PATH_RECORD_REVERSIBLE 0x80

/* PathRecord in its packed wire form (64 bytes, network byte order). */
struct ibv_path_record {
	__be64 service_id;
	union ibv_gid dgid;
	union ibv_gid sgid;
	__be16 dlid;
	__be16 slid;
	__be32 flowlabel_hoplimit; /* 31:28 reserved, 27:8 flow label, 7:0 hop limit */
	uint8_t tclass;
	uint8_t reversible_numpath; /* 7 reversible, 6:0 number of paths */
	__be16 pkey;
	__be16 qosclass_sl; /* 15:4 QoS class, 3:0 SL */
	uint8_t mtu;	    /* 7:6 selector, 5:0 MTU */
	uint8_t rate;	    /* 7:6 selector, 5:0 rate */
	uint8_t packetlifetime; /* 7:6 selector, 5:0 lifetime */
	uint8_t preference;
	uint8_t reserved[6];
};

/* Flags of ibv_path_data.flags. */
#define IBV_PATH_FLAG_GMP (1 << 0)
#define IBV_PATH_FLAG_PRIMARY (1 << 1)
#define IBV_PATH_FLAG_ALTERNATE (1 << 2)
#define IBV_PATH_FLAG_OUTBOUND (1 << 3)
#define IBV_PATH_FLAG_INBOUND (1 << 4)
#define IBV_PATH_FLAG_INBOUND_REVERSE (1 << 5)
#define IBV_PATH_FLAG_BIDIRECTIONAL (IBV_PATH_FLAG_OUTBOUND | IBV_PATH_FLAG_INBOUND_REVERSE)

/* A path record with its use flags. */
struct ibv_path_data {
	uint32_t flags; /* IBV_PATH_FLAG_* */
	uint32_t reserved;
	struct ibv_path_record path;
};

#ifdef __cplusplus
}
#endif

#endif /* INFINIBAND_SA_H */
