/* SPDX-License-Identifier: MIT */
/*
 * <rdma/rdma_cma.h> - umcast's RDMA connection manager API: the subset of
 * librdmacm that a UD multicast program uses (event channels, ids, address
 * binding and resolution, QP creation, multicast join/leave, events),
 * source-compatible with rdma-core.
 *
 * Names, numeric values and public struct layouts match rdma-core's
 * librdmacm.  Connection setup (route resolution, connect/listen/accept),
 * rdma_create_ep, SRQs and options are not provided.
 *
 * Return convention: functions returning int give 0 on success or -1 with
 * errno set (rdma_getaddrinfo() may also return an EAI_* code); functions
 * returning a pointer give NULL with errno set.  In a child of fork(2), a
 * call on an id, event or event channel of the parent fails with EIO
 * (umcast(7), FORK).
 *
 * Deliberate behaviour differences from librdmacm (see the man pages):
 *   - rdma_leave_multicast() and rdma_destroy_id() do not wait for the
 *     application to ack events: an event not yet acked keeps the objects it
 *     refers to alive until rdma_ack_cm_event();
 *   - a QP stays attached to a group joined twice on one id until the last of
 *     those joins is left;
 *   - rdma_destroy_qp() detaches the QP from its groups before destroying it.
 */
#ifndef RDMA_CMA_H
#define RDMA_CMA_H

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Constants                                                                 */

enum rdma_cm_event_type {
	RDMA_CM_EVENT_ADDR_RESOLVED,
	RDMA_CM_EVENT_ADDR_ERROR,
	RDMA_CM_EVENT_ROUTE_RESOLVED,
	RDMA_CM_EVENT_ROUTE_ERROR,
	RDMA_CM_EVENT_CONNECT_REQUEST,
	RDMA_CM_EVENT_CONNECT_RESPONSE,
	RDMA_CM_EVENT_CONNECT_ERROR,
	RDMA_CM_EVENT_UNREACHABLE,
	RDMA_CM_EVENT_REJECTED,
	RDMA_CM_EVENT_ESTABLISHED,
	RDMA_CM_EVENT_DISCONNECTED,
	RDMA_CM_EVENT_DEVICE_REMOVAL,
	RDMA_CM_EVENT_MULTICAST_JOIN,
	RDMA_CM_EVENT_MULTICAST_ERROR,
	RDMA_CM_EVENT_ADDR_CHANGE,
	RDMA_CM_EVENT_TIMEWAIT_EXIT,
	RDMA_CM_EVENT_ADDRINFO_RESOLVED,
	RDMA_CM_EVENT_ADDRINFO_ERROR,
	RDMA_CM_EVENT_USER,
	RDMA_CM_EVENT_INTERNAL,
};

/* Port spaces (IBA Annex A11 service ID ranges); UDP and IPOIB ids are UD. */
enum rdma_port_space {
	RDMA_PS_IPOIB = 0x0002,
	RDMA_PS_TCP = 0x0106,
	RDMA_PS_UDP = 0x0111,
	RDMA_PS_IB = 0x013F,
};

/* Service ID layout for IP-based port spaces (IBA Annex A11). */
#define RDMA_IB_IP_PS_MASK 0xFFFFFFFFFFFF0000ULL
#define RDMA_IB_IP_PORT_MASK 0x000000000000FFFFULL
#define RDMA_IB_IP_PS_TCP 0x0000000001060000ULL
#define RDMA_IB_IP_PS_UDP 0x0000000001110000ULL
#define RDMA_IB_PS_IB 0x00000000013F0000ULL

/* The Q_Key of every RDMA_PS_UDP QP and multicast group. */
#define RDMA_UDP_QKEY 0x01234567

/*
 * Largest private data an event can carry.  Not in rdma-core's public header
 * (its ABI header has it); provided for convenience.
 */
#ifndef RDMA_MAX_PRIVATE_DATA
#define RDMA_MAX_PRIVATE_DATA 256
#endif

enum {
	RDMA_MAX_RESP_RES = 0xFF,
	RDMA_MAX_INIT_DEPTH = 0xFF,
};

/* ------------------------------------------------------------------------- */
/* Addresses and routes                                                      */

/* IB addressing of an id: GIDs and P_Key (network byte order). */
struct rdma_ib_addr {
	union ibv_gid sgid;
	union ibv_gid dgid;
	__be16 pkey;
};

/* The id's source and destination socket addresses, plus its IB addressing. */
struct rdma_addr {
	union {
		struct sockaddr src_addr;
		struct sockaddr_in src_sin;
		struct sockaddr_in6 src_sin6;
		struct sockaddr_storage src_storage;
	};
	union {
		struct sockaddr dst_addr;
		struct sockaddr_in dst_sin;
		struct sockaddr_in6 dst_sin6;
		struct sockaddr_storage dst_storage;
	};
	union {
		struct rdma_ib_addr ibaddr;
	} addr;
};

struct rdma_route {
	struct rdma_addr addr;
	struct ibv_sa_path_rec *path_rec; /* NULL for multicast ids */
	int num_paths;
};

/* An event channel: fd becomes readable (poll(2)) when an event is queued. */
struct rdma_event_channel {
	int fd;
};

struct rdma_cm_event;

/*
 * A communication identifier.  The library fills: verbs, pd and port_num
 * when the id is bound to a device; route.addr on bind/resolve; qp,
 * send_cq/recv_cq and their channels on rdma_create_qp(); event for
 * synchronous ids (channel created internally).
 */
struct rdma_cm_id {
	struct ibv_context *verbs;
	struct rdma_event_channel *channel;
	void *context;
	struct ibv_qp *qp;
	struct rdma_route route;
	enum rdma_port_space ps;
	uint8_t port_num;
	struct rdma_cm_event *event;
	struct ibv_comp_channel *send_cq_channel;
	struct ibv_cq *send_cq;
	struct ibv_comp_channel *recv_cq_channel;
	struct ibv_cq *recv_cq;
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	enum ibv_qp_type qp_type;
};

/* Connection parameters (layout only: connections are not supported). */
struct rdma_conn_param {
	const void *private_data;
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint32_t qp_num;
};

/*
 * UD event data (RDMA_CM_EVENT_MULTICAST_JOIN and _ERROR): ah_attr addresses
 * the group (is_global = 1, grh.dgid = MGID, dlid = MLID), qp_num is 0xFFFFFF
 * and qkey the group's Q_Key.  private_data carries the join's context
 * pointer while private_data_len stays 0.
 */
struct rdma_ud_param {
	const void *private_data;
	uint8_t private_data_len;
	struct ibv_ah_attr ah_attr;
	uint32_t qp_num;
	uint32_t qkey;
};

struct rdma_cm_event {
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	enum rdma_cm_event_type event;
	int status; /* 0 or a negative errno */
	union {
		struct rdma_conn_param conn;
		struct rdma_ud_param ud;
		uint64_t arg;
	} param;
};

/* Bits of rdma_addrinfo.ai_flags. */
#define RAI_PASSIVE 0x00000001
#define RAI_NUMERICHOST 0x00000002
#define RAI_NOROUTE 0x00000004
#define RAI_FAMILY 0x00000008
#define RAI_SA 0x00000010
#define RAI_DNS 0x00000020 /* cannot be combined with RAI_SA */

/* One result of rdma_getaddrinfo(); a NULL-terminated list via ai_next. */
struct rdma_addrinfo {
	int ai_flags;
	int ai_family;
	int ai_qp_type;
	int ai_port_space;
	socklen_t ai_src_len;
	socklen_t ai_dst_len;
	struct sockaddr *ai_src_addr;
	struct sockaddr *ai_dst_addr;
	char *ai_src_canonname;
	char *ai_dst_canonname;
	size_t ai_route_len;
	void *ai_route;
	size_t ai_connect_len;
	void *ai_connect;
	struct rdma_addrinfo *ai_next;
};

/* Bits of rdma_cm_join_mc_attr_ex.comp_mask. */
enum rdma_cm_join_mc_attr_mask {
	RDMA_CM_JOIN_MC_ATTR_ADDRESS = 1 << 0,
	RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS = 1 << 1,
	RDMA_CM_JOIN_MC_ATTR_RESERVED = 1 << 2,
};

/* Values of rdma_cm_join_mc_attr_ex.join_flags (one value, not a mask). */
enum rdma_cm_mc_join_flags {
	RDMA_MC_JOIN_FLAG_FULLMEMBER,	       /* send and receive */
	RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, /* send only: no attach, no IGMP */
	RDMA_MC_JOIN_FLAG_RESERVED,
};

struct rdma_cm_join_mc_attr_ex {
	uint32_t comp_mask;  /* enum rdma_cm_join_mc_attr_mask */
	uint32_t join_flags; /* enum rdma_cm_mc_join_flags */
	struct sockaddr *addr;
};

/* ------------------------------------------------------------------------- */
/* Event channels and ids                                                    */

/*
 * rdma_create_event_channel - open a channel on which ids report events.
 * Returns the channel, or NULL with errno set (ENODEV: no RDMA device,
 * ENOMEM, EMFILE).  rdma_create_event_channel(3)
 */
struct rdma_event_channel *rdma_create_event_channel(void);

/*
 * rdma_destroy_event_channel - close a channel.  Every id using it must have
 * been destroyed.  rdma_create_event_channel(3)
 */
void rdma_destroy_event_channel(struct rdma_event_channel *channel);

/*
 * rdma_create_id - create an id in port space @ps with user @context, its
 * events reported on @channel; a NULL @channel makes the id synchronous (each
 * call waits for its own event, stored in id->event).  RDMA_PS_UDP and
 * RDMA_PS_IPOIB ids get qp_type IBV_QPT_UD.
 * Returns 0 and *@id, or -1 with errno set (EINVAL: unknown port space,
 * ENOMEM, ENODEV).  rdma_create_id(3)
 */
int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps);

/*
 * rdma_destroy_id - destroy an id, leaving every group it still has joined.
 * Its QP must have been destroyed (rdma_destroy_qp) first.  Does not wait
 * for unacked events (they stay valid until acked).
 * Returns 0, or -1 with errno set (EINVAL).  rdma_destroy_id(3)
 */
int rdma_destroy_id(struct rdma_cm_id *id);

/*
 * rdma_bind_addr - bind @id to local address @addr (AF_INET, AF_INET6 or
 * AF_IB).  A specific address binds the id to the device that owns it (sets
 * verbs, pd, port_num, route.addr.addr.ibaddr); a wildcard address does not.
 * Returns 0, or -1 with errno set (EINVAL: NULL or bad family or already
 * bound, EADDRNOTAVAIL: no device owns the address).  rdma_bind_addr(3)
 */
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr);

/*
 * rdma_resolve_addr - resolve destination @dst_addr (unicast or multicast)
 * to a local device, from @src_addr if given (else the routing table picks
 * it), within @timeout_ms milliseconds.  dst is stored in route.addr at
 * once; the result is RDMA_CM_EVENT_ADDR_RESOLVED (id bound to the device)
 * or RDMA_CM_EVENT_ADDR_ERROR.  Accepted on an id already bound with
 * rdma_bind_addr().
 * Returns 0, or -1 with errno set (EINVAL: bad family).
 * rdma_resolve_addr(3)
 */
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms);

/* ------------------------------------------------------------------------- */
/* QPs                                                                       */

/*
 * rdma_create_qp - create the id's QP on @pd (NULL: the device's default
 * PD, id->pd) and bring it to RTS; a UD QP gets qkey RDMA_UDP_QKEY (the
 * IPoIB broadcast group's Q_Key for RDMA_PS_IPOIB, which exists on
 * InfiniBand only).  NULL send_cq/recv_cq in @attr make the CM create CQs
 * and completion channels (cq_context = id), stored in the id.  @attr->cap
 * is updated with the granted sizes.
 * Returns 0, or -1 with errno set (EINVAL: id not bound to a device, id
 * already has a QP, PD or CQ of another device; ENODEV: RDMA_PS_IPOIB on a
 * RoCE device, which has no IPoIB broadcast group, as on Linux; ENOMEM).
 * rdma_create_qp(3)
 */
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr);

/*
 * rdma_create_qp_ex - rdma_create_qp() with extended attributes (comp_mask
 * IBV_QP_INIT_ATTR_PD, IBV_QP_INIT_ATTR_CREATE_FLAGS; a missing or NULL pd
 * means id->pd).  Returns 0, or -1 with errno set, as rdma_create_qp().
 * rdma_create_qp(3)
 */
int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *qp_init_attr);

/*
 * rdma_destroy_qp - detach the id's QP from its groups, destroy it and the
 * CQs and channels the CM created for it; id->qp becomes NULL.
 * rdma_create_qp(3)
 */
void rdma_destroy_qp(struct rdma_cm_id *id);

/* ------------------------------------------------------------------------- */
/* Multicast                                                                 */

/*
 * rdma_join_multicast - join group @addr (AF_INET, AF_INET6 or AF_IB) as a
 * full member; the id must be bound to a device (bind or resolve first).
 * Completion is reported as RDMA_CM_EVENT_MULTICAST_JOIN or _ERROR, with
 * @context in param.ud.private_data; when the JOIN event is retrieved the
 * id's QP, if any, is attached to the group.
 * Returns 0, or -1 with errno set (EINVAL: bad address, id not bound, not
 * UD; ENOMEM).  rdma_join_multicast(3)
 */
int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context);

/*
 * rdma_join_multicast_ex - join group @mc_join_attr->addr with the join flag
 * @mc_join_attr->join_flags (both comp_mask bits are required).  A send-only
 * full member can send to the group but its QP is not attached and, on
 * RoCE, no IGMP/MLD membership is made.  Events as rdma_join_multicast().
 * Returns 0, or -1 with errno set (EOPNOTSUPP: unknown comp_mask bits;
 * EINVAL: missing address or join flags, join_flags >= 2, bad address, id
 * not bound; ENOMEM).  rdma_join_multicast_ex(3)
 */
int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context);

/*
 * rdma_leave_multicast - leave the most recent join of @addr on @id (the
 * sockaddr is compared byte for byte), detaching the QP unless the join was
 * send-only or another join of the group remains.  Leaving before the join
 * completed cancels it; completions already queued may still arrive.
 * Returns 0, or -1 with errno set (EINVAL: bad address, EADDRNOTAVAIL: not
 * joined).  rdma_leave_multicast(3)
 */
int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr);

/* ------------------------------------------------------------------------- */
/* Events                                                                    */

/*
 * rdma_get_cm_event - return the next event of @channel in *@event; blocks
 * unless channel->fd is O_NONBLOCK.  Every event must be released with
 * rdma_ack_cm_event().
 * Returns 0, or -1 with errno set (EINVAL: NULL event, EAGAIN: non-blocking
 * and none queued, ENOMEM).  rdma_get_cm_event(3)
 */
int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event);

/*
 * rdma_ack_cm_event - release an event returned by rdma_get_cm_event().
 * Returns 0, or -1 with errno set (EINVAL: NULL).  rdma_ack_cm_event(3)
 */
int rdma_ack_cm_event(struct rdma_cm_event *event);

/*
 * rdma_event_str - the enum name of @event ("RDMA_CM_EVENT_MULTICAST_JOIN",
 * ...) for values 0..17, "UNKNOWN EVENT" otherwise.  rdma_event_str(3)
 */
const char *rdma_event_str(enum rdma_cm_event_type event);

/* rdma_get_local_addr - the id's source address (route.addr.src_addr). */
static inline struct sockaddr *rdma_get_local_addr(struct rdma_cm_id *id)
{
	return &id->route.addr.src_addr;
}

/* rdma_get_peer_addr - the id's destination address (route.addr.dst_addr). */
static inline struct sockaddr *rdma_get_peer_addr(struct rdma_cm_id *id)
{
	return &id->route.addr.dst_addr;
}

/* ------------------------------------------------------------------------- */
/* Devices and address lookup                                                */

/*
 * rdma_get_devices - a NULL-terminated array of the CM's open context of
 * every device; *@num_devices (if not NULL) gets the count.  Free with
 * rdma_free_devices(); the contexts themselves stay open.
 * Returns the array, or NULL with errno set (ENOMEM, ENODEV).
 * rdma_get_devices(3)
 */
struct ibv_context **rdma_get_devices(int *num_devices);

/* rdma_free_devices - free an array from rdma_get_devices().  rdma_get_devices(3) */
void rdma_free_devices(struct ibv_context **list);

/*
 * rdma_getaddrinfo - translate @node / @service (either may be NULL, not
 * both unless @hints gives an address) into rdma_addrinfo results, as
 * getaddrinfo(3) with the RAI_* flags of @hints; passive lookups fill
 * ai_src_*, active ones ai_dst_*.  Free with rdma_freeaddrinfo().
 * Returns 0 and *@res; -1 with errno set (EINVAL: nothing to resolve,
 * EOPNOTSUPP: RAI_SA, ENOMEM); or the non-zero EAI_* code of getaddrinfo.
 * rdma_getaddrinfo(3)
 */
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res);

/* rdma_freeaddrinfo - free a result list of rdma_getaddrinfo().  rdma_getaddrinfo(3) */
void rdma_freeaddrinfo(struct rdma_addrinfo *res);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_CMA_H */
