/* SPDX-License-Identifier: MIT */
/*
 * sm.h - umc-sm's internal objects and the functions between its files.
 *
 * umc-sm is the subnet manager and SA of umcast's simulated InfiniBand
 * subnet (umc-sm(8)).  It is single-threaded: main.c reads datagrams and
 * the clock and calls umc_sm_handle(), umc_sm_work() and umc_sm_tick();
 * everything else is a pure function of the state below, the time it is
 * given and the datagram (who sent it comes through struct umc_sm_out),
 * so unit tests and fuzzers drive it without sockets.
 *
 *   state.c        struct umc_sm: create (the IPoIB broadcast group), destroy, epoch;
 *                  every datagram out (umc_sm_send_msg, umc_sm_send_sa)
 *   handler.c      one datagram of the SM protocol (wire/sm_proto.h) -> replies
 *   ports.c        port registry: LIDs, GUIDs, control endpoints, leases
 *   hosts.c        source hosts (a remote address, a local user) and their caps
 *   defer.c        requests that wait behind the registered ports' (fair queues)
 *   sa.c           SA MAD dispatch: versions, SM_Key, RMPP control, method/attribute
 *   sa_response.c  SA responses and error replies, beneath the record handlers
 *   mcmember.c     MCMemberRecord Set/Delete/Get/GetTable (OpenSM 3.3.23's rules)
 *   groups.c       group table by MGID and MLID, MLID allocation, memberships
 *   rmpp.c         the RMPP sender for GetTable responses
 *   fwd.c          each MLID's forwarding (the multicast forwarding tables):
 *                  subscriptions of the ports that send to it, pushes,
 *                  acknowledgments, SA replies held until they came
 *   cpi.c          ClassPortInfo
 *   control.c      faults on demand (umc-ctl): failover, silence, rejected joins
 *   log.c          logging and counters
 *   main.c, options.c, peer.c: the daemon around it
 *
 * Indexes (all O(1) per request): ports by LID (array), by control
 * endpoint and by GUID (hash.h); groups by MGID (hash) and by MLID
 * (array); members by (MLID, LID) (hash), and each group's and each port's
 * members on lists, so a port that goes away leaves every group without a
 * scan of the group table.  Free MLIDs are a bitmap.
 */
#ifndef UMC_SM_SM_H
#define UMC_SM_SM_H

#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault/fault.h"
#include "hash.h"
#include "umc_param.h"
#include "wire/ctl_proto.h"
#include "wire/ib_mad.h"
#include "wire/sm_proto.h"

#define UMC_SM_NO_DEADLINE UINT64_MAX

struct umc_sm;
struct umc_sm_port;
struct umc_sm_group;
struct umc_sm_rmpp_txn;
struct umc_sm_host;
struct umc_sm_deferred;

/* ------------------------------------------------------------------------- */
/* Configuration (options.c fills it; umc_sm_config_default()).              */

struct umc_sm_config {
	struct sockaddr_in listen;
	uint64_t subnet_prefix;
	uint64_t sm_key;
	bool sm_key_set;     /* --sm-key given: SM_Key sm_key may change other ports' memberships */
	uint32_t lease_ms;
	uint32_t rmpp_time_ms; /* total time limit of a GetTable transfer */
	/* Caps (0 is never a valid value; umc-sm(8) says what each protects). */
	unsigned max_ports_per_host;  /* registered ports of one source host */
	unsigned max_groups_per_port; /* memberships of one port */
	unsigned max_groups_per_host; /* memberships of one source host's ports */
	unsigned max_rmpp_per_port;   /* GetTable transfers open to one port */
	unsigned max_rmpp_per_host;   /* ... to one source host's ports */
	uint32_t mcast_base; /* IPv4, host order */
	uint16_t data_port;
	uint16_t mlid_max;
	uint8_t port_mtu;    /* IB MTU code of every port */
	bool sendonly;	     /* false: --no-sendonly */
	bool unicast_fwd;    /* --forwarding unicast: every MLID forwarded by unicast */
	uint32_t fwd_wait_ms; /* --forwarding-wait: a join waits this long for the senders */
	uint64_t epoch;	     /* 0: choose one at create (tests and fuzzers fix it) */
	int verbose;	     /* -v count */
	int ready_fd;	     /* --ready-fd, -1 if none */
};

/* umc_sm_config_default - the documented defaults (umc-sm(8)). */
void umc_sm_config_default(struct umc_sm_config *cfg);

/* ------------------------------------------------------------------------- */
/* Counters (log.c prints them at exit with -v).  Every drop has its own.   */

#define UMC_SM_COUNTERS(X)                                                                         \
	X(rx_datagrams)	    /* datagrams handled */                                                \
	X(rx_malformed)	    /* short, bad magic, unknown type or wrong body length: dropped */     \
	X(rx_bad_version)   /* other protocol version: answered BAD_VERSION */                     \
	X(rx_unknown_port)  /* request from an unregistered endpoint, old epoch or LID */          \
	X(deferred)	    /* requests queued behind the registered ports' (REGISTER, scans) */   \
	X(shed_register)    /* new REGISTERs dropped: the registration queue was full */          \
	X(shed_query)	    /* scanning queries answered BUSY: their host's queue was full */     \
	X(shed_busy)	    /* queries dropped unread: their port was told BUSY just before */    \
	X(reg_new)	    /* ports registered */                                                 \
	X(reg_repeat)	    /* REGISTER retransmissions answered again */                          \
	X(reg_refused)	    /* REGISTER refused (GUID in use, no LID, invalid, a cap) */           \
	X(cap_ports)	    /* ... of those, at --max-ports-per-host */                            \
	X(cap_groups)	    /* Sets refused at --max-groups-per-port or --max-groups-per-host */   \
	X(cap_rmpp)	    /* GetTables answered BUSY at a transfer cap, before the table is built */ \
	X(renew)	    /* leases renewed by RENEW */                                          \
	X(unregister)	    /* ports removed by UNREGISTER */                                      \
	X(lease_expired)    /* ports removed because their lease passed */                         \
	X(resolve_ok)	    /* RESOLVE answered with an endpoint */                                \
	X(resolve_miss)	    /* RESOLVE of a LID without a data endpoint */                         \
	X(sa_requests)	    /* SA MADs from registered ports */                                    \
	X(sa_bad_class)	    /* MgmtClass not SubnAdm: dropped */                                   \
	X(sa_bad_version)   /* BaseVersion/ClassVersion: answered 0x0004 */                        \
	X(sa_bad_smkey)	    /* non-zero SM_Key that is not ours: dropped, no reply */              \
	X(sa_response)	    /* a response MAD (R bit) that is no RMPP control: dropped */          \
	X(sa_unsupported)   /* method/attribute not supported: answered 0x0008/0x000C */           \
	X(sa_rejected)	    /* answered with another non-zero status */                            \
	X(sa_rmpp_bad)	    /* RMPP DATA or version the SA does not take: dropped */               \
	X(sa_busy)	    /* answered BUSY: a transfer cap, a full queue */                      \
	X(rmpp_transfers)   /* multi-segment GetTable responses started */                         \
	X(rmpp_segments)    /* DATA segments sent, resends included */                             \
	X(rmpp_resends)	    /* windows resent (timeout or repeated ACK) */                         \
	X(rmpp_acks)	    /* ACKs taken, of transfers and of answers in one MAD */               \
	X(rmpp_stale)	    /* ACK/STOP/ABORT of no transfer and no answer in one MAD we recall */ \
	X(rmpp_aborted)	    /* transfers ended by STOP/ABORT from the client, or by bad ACKs */    \
	X(rmpp_timeouts)    /* transfers given up after UMC_SM_RMPP_RETRIES */                     \
	X(rmpp_too_long)    /* transfers aborted at their total time limit (T2L) */                \
	X(joins)	    /* successful Sets */                                                  \
	X(leaves)	    /* successful Deletes */                                               \
	X(groups_created)                                                                          \
	X(groups_deleted)                                                                          \
	X(tx_errors)	    /* datagrams the kernel refused to send */                             \
	X(failovers)	    /* umc-ctl failover: every port and group forgotten */                 \
	X(silent_dropped)   /* datagrams not answered while umc-ctl silent */                       \
	X(sa_fault_rejected) /* joins answered with umc-ctl reject's status */                     \
	X(fwd_subscribed)   /* SUBSCRIBEs answered with a FORWARD */                               \
	X(fwd_refused)	    /* SUBSCRIBEs refused (not an MLID of the map, a cap) */               \
	X(fwd_sent)	    /* FORWARD datagrams sent, segments and resends included */            \
	X(fwd_resent)	    /* ... of those, resent for want of an acknowledgment */               \
	X(fwd_acks)	    /* FWD_ACKs taken */                                                   \
	X(fwd_stale)	    /* FWD_ACKs for no subscription or a version not sent: dropped */      \
	X(fwd_held)	    /* SA replies held until the MLID's senders acknowledged */            \
	X(fwd_hold_expired) /* ... sent when the hold time passed instead */                       \
	X(fwd_lagging)	    /* subscriptions that missed a hold: they hold no reply until they ack */ \
	X(fwd_squatted)	    /* MLIDs forwarded by unicast since a member could not bind */

struct umc_sm_counters {
#define UMC_SM_COUNTER_FIELD(name) unsigned long name;
	UMC_SM_COUNTERS(UMC_SM_COUNTER_FIELD)
#undef UMC_SM_COUNTER_FIELD
};

/* ------------------------------------------------------------------------- */
/* Ports (ports.c).                                                          */

struct umc_sm_member;

struct umc_sm_port {
	uint16_t lid;
	uint64_t guid;
	uint64_t nonce;
	struct sockaddr_in ctrl; /* control endpoint: who the port is */
	uint32_t data_addr;	 /* unicast IB packets go here (host order) */
	uint16_t data_port;
	uint8_t mtu;  /* neighbour MTU (IB code) */
	uint8_t rate; /* port rate (PathRecord code) */
	uint8_t npkeys;
	uint16_t pkeys[UMC_SM_PKEY_TABLE_MAX];
	uint64_t expires; /* ms on the SM's clock */
	struct umc_sm_host *host; /* where it registered from */
	uint64_t quiet_until;	  /* told BUSY: its queries are dropped until then */
	struct umc_sm_port *lease_prev, *lease_next;
	struct umc_hnode ep_node, guid_node;
	struct umc_sm_member *members; /* this port's memberships */
	unsigned nmembers;
	struct umc_sm_rmpp_txn *txns; /* GetTable transfers in progress */
	unsigned ntxns;
	/* TIDs of the last GetTable answers that fit one MAD: their ACKs are due */
	uint64_t lone_tids[UMC_SM_RMPP_LONE_TIDS];
	uint8_t lone_valid; /* a bit per entry */
	uint8_t lone_next;
	struct umc_sm_sub *subs;      /* MLIDs it sends to (fwd.c) */
	unsigned nsubs;
	unsigned nstale;	      /* ... of those, given up resending to (fwd.c) */
};

struct umc_sm_ports {
	struct umc_sm_port **by_lid; /* lid_slots entries, grown as LIDs are handed out */
	unsigned lid_slots;
	struct umc_hash by_ep, by_guid;
	unsigned count;
	uint16_t next_lid;  /* next-fit cursor: LIDs are not reused at once */
	uint64_t next_guid; /* SM-assigned GUIDs: UMC_SM_GUID_BASE + n */
	struct umc_sm_port *lease_head, *lease_tail; /* soonest expiry first */
};

int umc_sm_ports_init(struct umc_sm_ports *p);
void umc_sm_ports_fini(struct umc_sm *sm);

/*
 * umc_sm_port_register - REGISTER from @ctrl, of source host @host_key
 * (umc_sm_host_key()).  Returns an enum umc_sm_status; *@port is the (new
 * or repeated) port on UMC_SM_OK.
 */
int umc_sm_port_register(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *ctrl,
			 uint64_t host_key, const struct umc_sm_register *reg,
			 struct umc_sm_port **port);
struct umc_sm_port *umc_sm_port_by_ep(struct umc_sm *sm, const struct sockaddr_in *ctrl);
struct umc_sm_port *umc_sm_port_by_lid(struct umc_sm *sm, uint16_t lid);
struct umc_sm_port *umc_sm_port_by_guid(struct umc_sm *sm, uint64_t guid);
void umc_sm_port_renew(struct umc_sm *sm, struct umc_sm_port *port, uint64_t now);
/* umc_sm_port_remove - leave every group (as Delete 0xF), drop transfers, free. */
void umc_sm_port_remove(struct umc_sm *sm, struct umc_sm_port *port, const char *why);
/* umc_sm_ports_expire - remove ports whose lease passed; returns the next expiry. */
uint64_t umc_sm_ports_expire(struct umc_sm *sm, uint64_t now);
/* umc_sm_port_has_pkey - the port's table holds a key with @pkey's base (OpenSM semantics). */
bool umc_sm_port_has_pkey(const struct umc_sm_port *port, uint16_t pkey);
/* umc_sm_ports_share_pkey - some valid key base in both tables, one of them a full member. */
bool umc_sm_ports_share_pkey(const struct umc_sm_port *a, const struct umc_sm_port *b);
/* umc_sm_port_gid - GID 0 of @port: subnet prefix + GUID, wire order. */
void umc_sm_port_gid(const struct umc_sm *sm, const struct umc_sm_port *port, uint8_t gid[16]);

/* ------------------------------------------------------------------------- */
/* Source hosts (hosts.c).                                                   */

/*
 * Who a request comes from, as far as the caps go: a remote IPv4 address,
 * or on this host a user (the owner of the sending socket, which main.c
 * asks the kernel for: every local process can send from any 127/8
 * address, so a local address says nothing), or, when the owner cannot be
 * found, "this host".  A key is the kind << 32 | the address or UID.
 */
enum umc_sm_host_kind {
	UMC_SM_HOST_ADDR = 1,  /* a remote IPv4 address (host order) */
	UMC_SM_HOST_USER = 2,  /* a local socket's owner (UID) */
	UMC_SM_HOST_LOCAL = 3, /* a local socket whose owner is unknown */
};

static inline uint64_t umc_sm_host_key_make(enum umc_sm_host_kind kind, uint32_t id)
{
	return (uint64_t)kind << 32 | id;
}

struct umc_sm_host {
	uint64_t key;
	unsigned ports;	  /* registered ports; the host goes with the last */
	unsigned members; /* memberships of those ports */
	unsigned txns;	  /* GetTable transfers open to those ports */
	unsigned subs;	  /* MLIDs those ports subscribed to (fwd.c) */
	struct umc_sm_deferred *queue, **queue_tail; /* scanning queries waiting */
	unsigned queued;
	struct umc_sm_host *ring_next; /* on the ring of hosts with queries waiting; NULL: not */
	struct umc_hnode node;
};

/*
 * umc_sm_host_key - the source host of a datagram from @src to our @dst
 * (NULL: unknown): sm->out.source's answer, or without one the address,
 * with every 127/8 address one UMC_SM_HOST_LOCAL.
 */
uint64_t umc_sm_host_key(struct umc_sm *sm, const struct sockaddr_in *src,
			 const struct sockaddr_in *dst);
/* umc_sm_host_key_addr - what the address alone says: 127/8 is one UMC_SM_HOST_LOCAL. */
uint64_t umc_sm_host_key_addr(const struct sockaddr_in *src);
/* umc_sm_host_get - the host of @key, made if new (NULL: ENOMEM); counts a port in. */
struct umc_sm_host *umc_sm_host_get(struct umc_sm *sm, uint64_t key);
/* umc_sm_host_find - the host of @key, or NULL. */
struct umc_sm_host *umc_sm_host_find(struct umc_sm *sm, uint64_t key);
/* umc_sm_host_put - counts a port out; the host is freed with its last port. */
void umc_sm_host_put(struct umc_sm *sm, struct umc_sm_host *host);
/* umc_sm_host_str - "10.0.0.1", "user 1000" or "this host" (buf: 32 bytes). */
const char *umc_sm_host_str(uint64_t key, char *buf);

/* ------------------------------------------------------------------------- */
/* Groups and memberships (groups.c).                                        */

struct umc_sm_member {
	struct umc_sm_group *grp;
	struct umc_sm_port *port;
	uint8_t join_state;
	bool proxy; /* joined by another port (ProxyJoin) */
	struct umc_sm_member *grp_prev, *grp_next;
	struct umc_sm_member *port_prev, *port_next;
	struct umc_hnode node; /* key: MLID << 16 | LID */
};

struct umc_sm_group {
	/*
	 * The group's record: MGID, MLID, Q_Key, P_Key, TClass, SL, FlowLabel,
	 * HopLimit, Scope, PacketLifeTime as the creator sent them, MTU and Rate
	 * as realised, the three selectors 2 (exactly), JoinState = the
	 * creator's (OpenSM keeps the creating request's record this way).
	 */
	struct umc_mcmember rec;
	bool well_known;       /* the IPoIB broadcast group: never deleted */
	unsigned full_members; /* members with 0x1 or 0x8 */
	unsigned nmembers;
	struct umc_sm_member *members;
	struct umc_hnode node; /* key: MGID */
	struct umc_sm_group *prev, *next;
};

struct umc_sm_groups {
	struct umc_hash by_mgid;
	struct umc_hash members; /* its count: every membership */
	struct umc_sm_group **by_mlid; /* one per MLID of 0xC000..cfg.mlid_max */
	uint64_t mlid_used[UMC_SM_MLID_SPACE / 64];
	struct umc_sm_group *list;
	unsigned count;
	uint32_t mgid_counter; /* SA-assigned MGIDs */
};

int umc_sm_groups_init(struct umc_sm_groups *g, uint16_t mlid_max);
void umc_sm_groups_fini(struct umc_sm *sm);
struct umc_sm_group *umc_sm_group_by_mgid(struct umc_sm *sm, const uint8_t mgid[16]);
struct umc_sm_group *umc_sm_group_by_mlid(struct umc_sm *sm, uint16_t mlid);
/* umc_sm_mlid_pick - @want if free and in range, else the lowest free; 0 if none. */
uint16_t umc_sm_mlid_pick(struct umc_sm *sm, uint16_t want);
/* umc_sm_group_create - a group with @rec (its MLID picked by the caller); NULL: ENOMEM. */
struct umc_sm_group *umc_sm_group_create(struct umc_sm *sm, const struct umc_mcmember *rec,
					 bool well_known);
/* umc_sm_group_delete - remove the group and its members. */
void umc_sm_group_delete(struct umc_sm *sm, struct umc_sm_group *grp);
struct umc_sm_member *umc_sm_member_find(struct umc_sm *sm, const struct umc_sm_group *grp,
					 const struct umc_sm_port *port);
/* umc_sm_member_join - add @port or OR @join_state into its membership; NULL: ENOMEM. */
struct umc_sm_member *umc_sm_member_join(struct umc_sm *sm, struct umc_sm_group *grp,
					 struct umc_sm_port *port, uint8_t join_state, bool proxy);
/*
 * umc_sm_member_leave - clear @bits of @m's JoinState (IBA o15-0.1.14).  The
 * membership goes when nothing is left; the group's other members and the
 * group itself go when no full (0x1 or 0x8) member is left, unless it is
 * well known.  Returns the JoinState @m's port still holds afterwards.
 */
uint8_t umc_sm_member_leave(struct umc_sm *sm, struct umc_sm_member *m, uint8_t bits);

/* ------------------------------------------------------------------------- */
/* SA: the dispatcher (sa.c), the record handlers (mcmember.c, cpi.c), the   */
/* responses beneath them (sa_response.c).                                   */

enum umc_sm_sa_reply_kind {
	UMC_SM_SA_NO_REPLY,    /* nothing is sent (counted) */
	UMC_SM_SA_REPLY_MAD,   /* reply->mad is the response */
	UMC_SM_SA_REPLY_TABLE, /* GetTable: reply->mad's header, reply->table the records */
};

struct umc_sm_sa_reply {
	enum umc_sm_sa_reply_kind kind;
	uint8_t mad[UMC_MAD_SIZE];
	const uint8_t *table; /* UMC_MCMEMBER_STRIDE bytes per record, owned by the state */
	size_t table_len;
	uint32_t nrecords;
};

/*
 * umc_sm_sa_process - the SA: one MAD from registered port @port, the reply.
 * The pure entry point the unit and differential tests drive.  RMPP ACK,
 * STOP and ABORT MADs go to rmpp.c (they need @now; NO_REPLY here).
 */
void umc_sm_sa_process(struct umc_sm *sm, struct umc_sm_port *port, const uint8_t *mad,
		       uint64_t now, struct umc_sm_sa_reply *reply);

/*
 * umc_sm_sa_error - @reply = the request echoed with @status (OpenSM's
 * osm_sa_send_error); @why goes to the -v log.
 */
void umc_sm_sa_error(struct umc_sm *sm, const struct umc_sm_port *port, const uint8_t *req,
		     const struct umc_sa_hdr *h, uint16_t status, const char *why,
		     struct umc_sm_sa_reply *reply);
/* umc_sm_sa_respond - @reply = a success for @h; returns its SA data to fill. */
uint8_t *umc_sm_sa_respond(const struct umc_sa_hdr *h, uint16_t attr_offset,
			   struct umc_sm_sa_reply *reply);
/* umc_sm_sa_respond_table - @reply = a GetTable success with @nrecords of @table. */
void umc_sm_sa_respond_table(const struct umc_sa_hdr *h, const uint8_t *table, uint32_t nrecords,
			     struct umc_sm_sa_reply *reply);

void umc_sm_sa_mcmember(struct umc_sm *sm, struct umc_sm_port *port, const uint8_t *mad,
			const struct umc_sa_hdr *h, struct umc_sm_sa_reply *reply);

/* How soon an SA MAD is served (umc_sm_sa_classify). */
enum umc_sm_sa_class {
	UMC_SM_SA_NOW,	 /* at once: everything but the scans below */
	UMC_SM_SA_LATER, /* an MCMemberRecord Get or GetTable that scans every group */
	UMC_SM_SA_BUSY,	 /* a GetTable that could not get its transfer: BUSY (in @busy) */
};

/*
 * umc_sm_sa_classify - which class @mad from @port is in; cheap (no table
 * is built).  For UMC_SM_SA_BUSY, @busy holds the BUSY reply.
 */
enum umc_sm_sa_class umc_sm_sa_classify(struct umc_sm *sm, struct umc_sm_port *port,
					const uint8_t *mad, struct umc_sm_sa_reply *busy);
/*
 * umc_sm_sa_mcmember_fits - can @port get the transfer that a GetTable
 * with header @h and record @rec may need?  Judged from counts, before the
 * table is built; false counts cap_rmpp.
 */
bool umc_sm_sa_mcmember_fits(struct umc_sm *sm, struct umc_sm_port *port,
			     const struct umc_sa_hdr *h, const struct umc_mcmember *rec);
void umc_sm_sa_cpi(struct umc_sm *sm, const uint8_t *mad, const struct umc_sa_hdr *h,
		   struct umc_sm_sa_reply *reply);

/* ------------------------------------------------------------------------- */
/* RMPP sender (rmpp.c).                                                     */

struct umc_sm_rmpp_txn {
	struct umc_sm_port *port;
	struct umc_sm_rmpp_txn *next;	      /* on the port's list */
	struct umc_sm_rmpp_txn *all_prev, *all_next;
	struct umc_sa_hdr hdr;		      /* the response's header */
	uint32_t proto_tid;		      /* tid of the request datagram */
	uint8_t *data;			      /* the records */
	size_t len;
	uint32_t nseg;
	uint32_t last_ack;		      /* last segment the receiver has, in order */
	uint32_t window_last;		      /* last segment we may send */
	uint32_t sent;			      /* highest segment sent */
	bool resent_for_ack;		      /* resent after an ACK for less than sent */
	unsigned retries;
	uint64_t deadline;		      /* resend the window then */
	uint64_t give_up;		      /* the total time limit: ABORT T2L then */
};

/*
 * umc_sm_rmpp_send - send a GetTable response: one MAD if it fits, else
 * start a transfer.  Returns 0, or -EBUSY (the caller answers BUSY).
 */
int umc_sm_rmpp_send(struct umc_sm *sm, struct umc_sm_port *port, uint32_t proto_tid,
		     const struct umc_sm_sa_reply *r, uint64_t now);
/* umc_sm_rmpp_control - an ACK, STOP or ABORT MAD from @port. */
void umc_sm_rmpp_control(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sa_hdr *h,
			 uint64_t now);
/* umc_sm_rmpp_tick - resend or give up; returns the next deadline. */
uint64_t umc_sm_rmpp_tick(struct umc_sm *sm, uint64_t now);
/*
 * umc_sm_rmpp_room - may @port start a transfer of @len bytes for TID
 * @tid?  True when it fits one MAD or replaces @port's transfer of @tid;
 * else the per-port, per-host and UMC_SM_RMPP_MAX_BYTES caps decide.
 */
bool umc_sm_rmpp_room(const struct umc_sm *sm, const struct umc_sm_port *port, uint64_t tid,
		      size_t len);
/* umc_sm_rmpp_port_gone - drop @port's transfers. */
void umc_sm_rmpp_port_gone(struct umc_sm *sm, struct umc_sm_port *port);

/* ------------------------------------------------------------------------- */
/* Multicast forwarding (fwd.c).                                             */

/*
 * What a switch's multicast forwarding table holds for an MLID, as the SM
 * programs it: where its packets go.  MULTICAST: its IP group and the data
 * port (the default, the map of the REGISTER reply); UNICAST (every MLID
 * with --forwarding unicast, or one a member could not bind): the data
 * endpoints of its receiving member ports, each sender sending one copy to
 * each.  A port that sends to an MLID subscribes to it; umc-sm sends it
 * the forwarding and every new version, until it acknowledges.
 */
struct umc_sm_mlfwd;
struct umc_sm_held;

struct umc_sm_sub {
	struct umc_sm_port *port;
	struct umc_sm_mlfwd *f;
	uint32_t sent;	     /* the version last sent (0: none yet) */
	uint32_t acked;	     /* the highest version it acknowledged */
	uint32_t tid;	     /* its SUBSCRIBE's, for the answer; 0 once answered */
	unsigned tries;	     /* sends of @sent */
	uint64_t resend_at;  /* when @sent goes again, while on the resend list */
	bool on_resend;
	bool stale;	     /* resends given up: sent again at the port's next RENEW */
	bool lagging;	     /* missed a hold: holds no reply until it acknowledges */
	struct umc_sm_sub *port_prev, *port_next; /* the port's */
	struct umc_sm_sub *f_prev, *f_next;	  /* the MLID's */
	struct umc_sm_sub *rs_prev, *rs_next;	  /* the resend list */
	struct umc_hnode node;			  /* key: MLID << 16 | LID */
};

struct umc_sm_mlfwd {
	uint16_t mlid;
	bool unicast;
	bool dirty;	      /* a new version not sent yet (umc_sm_fwd_flush) */
	uint32_t version;     /* 1 from the first use, one more at each change */
	struct umc_sm_sub *subs;
	unsigned nsubs;
	struct umc_sm_held *held, **held_tail; /* SA replies waiting for its senders */
	struct umc_sm_mlfwd *dirty_next;
};

struct umc_sm_fwds {
	struct umc_sm_mlfwd **by_mlid;	  /* 0xC000..cfg.mlid_max, each made at first use */
	struct umc_hash subs;		  /* struct umc_sm_sub by MLID and LID */
	struct umc_sm_mlfwd *dirty;	  /* versions to send */
	struct umc_sm_sub *rs_head, *rs_tail; /* waiting for an acknowledgment, soonest first */
	struct umc_sm_held *held_head, *held_tail; /* every held reply, soonest deadline first */
	unsigned nheld;
	uint8_t *list;			  /* the entries of one list, scratch */
	size_t list_cap;
};

int umc_sm_fwd_init(struct umc_sm *sm);
void umc_sm_fwd_fini(struct umc_sm *sm);
/* umc_sm_fwd_changed - the receiving members of @mlid changed (groups.c). */
void umc_sm_fwd_changed(struct umc_sm *sm, uint16_t mlid);
/* umc_sm_fwd_port_gone - drop @port's subscriptions and its held replies. */
void umc_sm_fwd_port_gone(struct umc_sm *sm, struct umc_sm_port *port);
/* umc_sm_fwd_renewed - @port renewed its lease: resend what it never acknowledged. */
void umc_sm_fwd_renewed(struct umc_sm *sm, struct umc_sm_port *port, uint64_t now);
/*
 * The protocol's requests from registered port @port (handler.c): SUBSCRIBE,
 * UNSUBSCRIBE, FWD_ACK, SQUATTED.
 */
void umc_sm_fwd_request(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sm_msg *m,
			uint64_t now);
/* umc_sm_fwd_mlid_of - the MLID of the group an MCMemberRecord Set or Delete names, or 0. */
uint16_t umc_sm_fwd_mlid_of(struct umc_sm *sm, const uint8_t *mad);
/*
 * umc_sm_fwd_hold - should SA reply @mad to @port about MLID @mlid wait
 * until @mlid's senders acknowledged its current forwarding?  Then it is
 * kept and sent later (true).
 */
bool umc_sm_fwd_hold(struct umc_sm *sm, struct umc_sm_port *port, uint32_t tid, uint16_t mlid,
		     const uint8_t *mad, uint64_t now);
/* umc_sm_fwd_flush - send the versions made since the last flush. */
void umc_sm_fwd_flush(struct umc_sm *sm, uint64_t now);
/* umc_sm_fwd_tick - resends, and held replies whose time passed; the next deadline. */
uint64_t umc_sm_fwd_tick(struct umc_sm *sm, uint64_t now);

/* ------------------------------------------------------------------------- */
/* Requests that wait (defer.c).                                             */

/*
 * A request that waits until the registered ports' requests waiting on
 * the socket have been served: a REGISTER of a new port, or a query that
 * scans every group.  Queries wait on their source host's queue and the
 * hosts take turns; REGISTERs wait on one queue, taking turns with the
 * hosts.  A full queue refuses (UMC_SM_DEFER_* in umc_param.h).
 */
struct umc_sm_deferred {
	struct umc_sm_deferred *next;
	struct umc_sm_port *port; /* a query's port; NULL for a REGISTER */
	struct sockaddr_in src, dst; /* a REGISTER's endpoints */
	uint32_t tid;
	union {
		struct umc_sm_register reg;
		uint8_t mad[UMC_MAD_SIZE];
	};
};

struct umc_sm_defer {
	struct umc_sm_deferred *reg, **reg_tail; /* REGISTERs, in order */
	unsigned nreg;
	struct umc_sm_host *ring; /* the last host of the circular ring of hosts with queries */
	unsigned nqueries;
	bool reg_next; /* a REGISTER's turn next */
};

/* umc_sm_defer - queue a copy of @d.  Returns 0, or -ENOBUFS (full) or -ENOMEM. */
int umc_sm_defer(struct umc_sm *sm, const struct umc_sm_deferred *d);
/* umc_sm_defer_next - the next request to serve (the caller frees it), or NULL. */
struct umc_sm_deferred *umc_sm_defer_next(struct umc_sm *sm);
/* umc_sm_defer_port_gone - drop @port's waiting queries. */
void umc_sm_defer_port_gone(struct umc_sm *sm, struct umc_sm_port *port);
/* umc_sm_defer_fini - drop everything waiting. */
void umc_sm_defer_fini(struct umc_sm *sm);

/* ------------------------------------------------------------------------- */
/* The state (state.c) and the datagram handler (handler.c).                  */

/*
 * The state's way out: where the handler's datagrams go (main.c sends them,
 * tests capture them), and, optionally, who sent a datagram from @src to
 * our address @dst (a umc_sm_host_key_make() key; main.c asks the kernel).
 */
struct umc_sm_out {
	void (*send)(void *ctx, const struct sockaddr_in *to, const uint8_t *buf, size_t len);
	uint64_t (*source)(void *ctx, const struct sockaddr_in *src, const struct sockaddr_in *dst);
	void *ctx;
};

/* Faults on demand (control.c): set by umc-ctl, in force until changed. */
enum { UMC_SM_REJECT_MAX = 16 };

struct umc_sm_faults {
	uint64_t silent_until; /* ms: nothing is answered before then */
	int nreject;
	struct umc_fault_rule reject[UMC_SM_REJECT_MAX]; /* "sa group=G reject=S" */
};

struct umc_sm {
	struct umc_sm_config cfg;
	uint64_t epoch;
	struct umc_sm_out out;
	struct umc_sm_counters cnt;
	struct umc_sm_ports ports;
	struct umc_hash hosts; /* struct umc_sm_host by key */
	struct umc_sm_groups groups;
	struct umc_sm_defer defer;
	struct umc_sm_rmpp_txn *txns; /* every transfer, for the timer */
	unsigned ntxns;
	size_t txn_bytes;
	uint8_t *table; /* GetTable scratch, grown as needed */
	size_t table_cap;
	struct umc_sm_faults faults;
	struct umc_sm_fwds fwd;
};

/**
 * umc_sm_create - a subnet: no ports, the IPoIB broadcast group, an epoch.
 * @cfg: configuration (copied)
 * @out: where replies go (copied)
 * Returns: the state, or NULL (ENOMEM).
 */
struct umc_sm *umc_sm_create(const struct umc_sm_config *cfg, const struct umc_sm_out *out);
/** umc_sm_destroy - free every port, group and transfer; NULL is a no-op. */
void umc_sm_destroy(struct umc_sm *sm);

/**
 * umc_sm_failover - start over as a restarted umc-sm (or a standby SM that
 * took over) would: every port and group forgotten, the IPoIB broadcast
 * group made again, a new epoch; the configuration, counters and faults
 * stay.  Every port's next request is answered UNKNOWN_PORT.
 * Returns: 0, or -ENOMEM (the state is then empty but usable).
 */
int umc_sm_failover(struct umc_sm *sm);

/**
 * umc_sm_control - one request of the control socket (umc-ctl): failover,
 * silent SECS, reject GROUP STATUS (control.c).  @now: ms, as
 * umc_sm_handle's.  Fills @rep's status and text.
 */
void umc_sm_control(struct umc_sm *sm, uint64_t now, const struct umc_ctl_msg *req,
		    struct umc_ctl_msg *rep);

/* umc_sm_silent - is umc-sm silent at @now (umc-ctl silent)?  Counts the datagram. */
bool umc_sm_silent(struct umc_sm *sm, uint64_t now);

/* umc_sm_reject_status - the status umc-ctl reject gave joins of @mgid, or 0. */
uint16_t umc_sm_reject_status(const struct umc_sm *sm, const uint8_t mgid[16]);

/**
 * umc_sm_handle - one datagram from @src to our address @dst (NULL if not
 * known) that arrived at @now (ms, monotonic).  Replies go through
 * sm->out.  Never fails: what cannot be answered is counted and dropped.
 * A REGISTER of a new port or a scanning query waits (umc_sm_work()).
 */
void umc_sm_handle(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *src,
		   const struct sockaddr_in *dst, const uint8_t *buf, size_t len);

/**
 * umc_sm_work - serve one request that waits, at @now.
 * Returns: true if more wait.
 */
bool umc_sm_work(struct umc_sm *sm, uint64_t now);

/**
 * umc_sm_tick - what is due: RMPP resends and limits at @now, the
 * forwarding (fwd.c: versions to send, resends, held replies), and the
 * leases that passed before @seen, the time before which every datagram
 * that arrived has been handled (so a renewal still waiting to be read
 * never lets its port expire).  Returns the next deadline.
 */
uint64_t umc_sm_tick(struct umc_sm *sm, uint64_t now, uint64_t seen);

/* umc_sm_send_msg - encode @m and hand it to sm->out. */
void umc_sm_send_msg(struct umc_sm *sm, const struct sockaddr_in *to, const struct umc_sm_msg *m);
/* umc_sm_send_status - a reply to @req with @status and no body, about LID @lid. */
void umc_sm_send_status(struct umc_sm *sm, const struct sockaddr_in *to,
			const struct umc_sm_hdr *req, uint16_t status, uint16_t lid);
/* umc_sm_send_sa - an SA reply datagram carrying @mad to @port. */
void umc_sm_send_sa(struct umc_sm *sm, const struct umc_sm_port *port, uint32_t tid,
		    const uint8_t *mad);

/* ------------------------------------------------------------------------- */
/* Logging (log.c).                                                          */

enum umc_sm_log_level {
	UMC_SM_LOG_ERR = 0,   /* always */
	UMC_SM_LOG_INFO = 1,  /* -v: registrations, groups, rejections */
	UMC_SM_LOG_DEBUG = 2, /* -vv: every request */
};

/* umc_sm_log_on - would umc_sm_log() print at @level?  (Format only then.) */
static inline bool umc_sm_log_on(const struct umc_sm *sm, int level)
{
	return level <= sm->cfg.verbose;
}

void umc_sm_log(const struct umc_sm *sm, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* umc_sm_log_counters - every counter, one "name value" line each, to stderr. */
void umc_sm_log_counters(const struct umc_sm *sm);
/* umc_sm_gid_str - "fe80::2" style text of a GID (buf: 46 bytes). */
const char *umc_sm_gid_str(const uint8_t gid[16], char *buf);

#endif /* UMC_SM_SM_H */
