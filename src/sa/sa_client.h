/* SPDX-License-Identifier: MIT */
/*
 * sa_client.h - umcast's SA client: one port of the simulated InfiniBand
 * subnet, registered with umc-sm, and SA MAD transactions over it
 * (internal API; the IB link and the CM use it).
 *
 * A client is one port: it owns a UDP socket connected to umc-sm (whose
 * address and port identify the port to the SM, wire/sm_proto.h), the
 * port's registration and lease, and a thread that renews the lease,
 * retransmits and times out MAD transactions, reassembles RMPP responses
 * and calls back.  Everything is in struct umc_sa_client, nothing global.
 *
 * Registration.  umc_sa_open() registers synchronously (a bounded wait).
 * When the SM's address is one of this host's, the client first asks the
 * kernel who holds it (sock_diag(7)), and speaks only to a holder of a
 * user it trusts (sa_trust.h): a process that binds the address before
 * umc-sm would otherwise get every registration and answer every join.
 * Every datagram from the address is checked so too, and one that another
 * socket than the one registered with sent, if its owner is not trusted,
 * is dropped and loses the port (counted untrusted); the port then
 * registers again only with a trusted holder.
 * If the SM later says the port is unknown (its lease passed, or umc-sm
 * restarted: a new subnet epoch), or no lease renewal is answered for a
 * whole lease, the client calls event(UMC_SA_EVENT_PORT_LOST): every
 * membership of the port is gone, and the CM turns this into
 * RDMA_CM_EVENT_MULTICAST_ERROR -ENETRESET for every joined id (as the
 * kernel's core/multicast.c mcast_event_handler() does on
 * CLIENT_REREGISTER).  It then registers again,
 * asking for the same port GUID, and calls event(UMC_SA_EVENT_PORT_ACTIVE)
 * once registered (the LID and the epoch may have changed; see
 * umc_sa_query_port()).  Transactions pending meanwhile are not failed:
 * they are sent again once the port is back, within their own timeout.
 *
 * Transactions.  umc_sa_send() sends one 256-byte SA MAD; the client
 * writes its TransactionID.  At most UMC_SA_WINDOW responses may be on
 * their way at once, so that they all fit in the socket's buffer: further
 * requests wait their turn, in order, and their timeout starts when they
 * are sent, unless the SA answers nothing at all for that long (sa_txn.c).
 * The callback runs once: with the response
 * (any MAD status; for a GetTable the reassembled records), or with
 * -ETIMEDOUT when no response came within the timeout (the MAD is resent
 * retries times within it, as the kernel's SA queries: 3000 ms), or with
 * -ECONNABORTED when an RMPP transfer failed.  umc_sa_cancel() guarantees
 * that the callback does not run after it returns.
 *
 * Threads.  Every function may be called from any thread.  Callbacks and
 * events run on the client's thread, one at a time, with no client lock
 * held: they may call umc_sa_send() and umc_sa_cancel(), not
 * umc_sa_close(), umc_sa_call() or umc_sa_resolve_lid().
 *
 * fork().  A child must not use its parent's port: umc-sm knows the port by
 * the parent's socket, and the client thread does not exist in the child.
 * The child leaves the parent's client alone (the library's fork handling
 * keeps it, as it keeps the parent's other objects) and opens its own.
 */
#ifndef UMC_SA_CLIENT_H
#define UMC_SA_CLIENT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/ib_mad.h"
#include "wire/sm_proto.h"

struct umc_sa_client;

enum umc_sa_event {
	UMC_SA_EVENT_PORT_LOST = 1, /* the SM no longer holds the port: memberships gone */
	UMC_SA_EVENT_PORT_ACTIVE,   /* registered again after PORT_LOST */
};

/* The port as registered: what query_port reports. */
struct umc_sa_port_attr {
	struct umc_sm_port_info info; /* LID, GUID, prefix, SM LID/SL, MTU, rate, P_Keys, map */
	uint64_t epoch;		      /* the subnet epoch of the registration */
	uint8_t gid[16];	      /* GID index 0: subnet prefix + port GUID */
	int active;		      /* 1 while registered, 0 after PORT_LOST until PORT_ACTIVE */
	int down;		      /* 1 while down by umc_sa_port_down() (active is 0) */
};

/*
 * What an injected fault does to an SA request about to be sent
 * (umc_sa_open_args.fault; fault/stage.h).
 */
enum umc_sa_fault {
	UMC_SA_FAULT_NONE,    /* sent */
	UMC_SA_FAULT_DROP,    /* not sent this time: resent as a lost one is */
	UMC_SA_FAULT_TIMEOUT, /* never sent: the transaction ends with -ETIMEDOUT */
	UMC_SA_FAULT_REJECT,  /* not sent: answered at once with a MAD status */
};

/*
 * One MLID's forwarding as umc-sm sends it (umc-sm(8) FORWARDING): where
 * the port sends the MLID's packets.  Valid during the callback only.
 */
struct umc_sa_fwd {
	uint16_t mlid;
	bool unicast;	   /* false: e[0] is the IP group and UDP port */
	uint32_t version;  /* grows with each change, per MLID and subnet epoch */
	unsigned n;	   /* entries: 1 for multicast, the receiving ports for unicast */
	const struct umc_sm_fwd_entry *e;
};

struct umc_sa_open_args {
	struct sockaddr_in sm;	 /* umc-sm's address (umc_sa_parse_endpoint()) */
	struct sockaddr_in data; /* where the port receives unicast IB packets; 0.0.0.0:0 for none */
	uint64_t port_guid;	 /* GUID to ask for; 0: the SM's choice */
	unsigned timeout_ms;	 /* registration wait; 0: UMC_SA_REGISTER_TIMEOUT_MS */
	void (*event)(void *ctx, enum umc_sa_event ev); /* NULL: no events */
	/*
	 * A new version of a subscribed MLID's forwarding (NULL: none taken).
	 * On the client thread; once it returns, the port must send by it:
	 * the client acknowledges it to umc-sm.
	 */
	void (*fwd)(void *ctx, const struct umc_sa_fwd *f);
	void *event_ctx; /* for both */
	/*
	 * Injected faults, NULL for none: called, with the client's lock held,
	 * for every request about to be sent, @first for a transaction's
	 * first send; for UMC_SA_FAULT_REJECT it writes the status.
	 */
	enum umc_sa_fault (*fault)(void *ctx, const uint8_t *mad, bool first, uint16_t *status);
	void *fault_ctx;
};

/* A response, valid during the callback only. */
struct umc_sa_reply {
	uint16_t status;     /* MAD Status: 0 success, else IBA 13.4.7 / 15.2.1.1 */
	const uint8_t *mad;  /* the response MAD (for RMPP: segment 1), UMC_MAD_SIZE bytes */
	const uint8_t *data; /* the SA data: a GetTable's records, reassembled, else mad + 56 */
	size_t data_len;     /* bytes at data: records * 8 * AttributeOffset (a method that
				uses RMPP, umc_sa_method_uses_rmpp()), else always 200 */
};

typedef void (*umc_sa_cb)(void *ctx, int err, const struct umc_sa_reply *reply);

/**
 * umc_sa_open - register a port with umc-sm and start its client thread.
 * @args: the SM, the port's data endpoint, options
 * @out:  the client
 *
 * REGISTER is resent every UMC_SA_REGISTER_RESEND_MS until answered or
 * @args->timeout_ms has passed.
 *
 * Context: blocks up to the timeout; may be called from any thread.
 * Returns: 0; -ETIMEDOUT (no answer), -ECONNREFUSED (nothing listens at the
 * SM's address), -EACCES (the SM's address is this host's and a process
 * of a user umc_trusted_uid() does not trust holds it: nothing is sent to
 * it; said once on stderr), -EADDRINUSE (the asked GUID is another port's), -ENOSPC
 * (the SM has no LID left), -EINVAL (an invalid argument or GUID),
 * -EPROTONOSUPPORT (another protocol version), -ENOMEM, or the errno of
 * socket()/connect()/pthread_create().
 */
int umc_sa_open(const struct umc_sa_open_args *args, struct umc_sa_client **out);

/**
 * umc_sa_close - unregister the port and free the client.
 * @c: the client; NULL is a no-op
 *
 * Pending transactions are dropped without their callbacks; the thread is
 * stopped and joined; UNREGISTER is sent and its reply awaited at most
 * UMC_SA_CLOSE_WAIT_MS (if it is lost the port's lease ends on its own).
 *
 * Context: not from a callback; blocks briefly.
 */
void umc_sa_close(struct umc_sa_client *c);

/**
 * umc_sa_query_port - the port's current attributes.
 * @c:    the client
 * @attr: filled in; attr->active is 0 between PORT_LOST and PORT_ACTIVE
 *        (the other fields then describe the last registration)
 *
 * Returns: 0.
 */
int umc_sa_query_port(struct umc_sa_client *c, struct umc_sa_port_attr *attr);

/**
 * umc_sa_send - start an SA transaction.
 * @c:          the client
 * @mad:        the request, UMC_MAD_SIZE bytes; its TransactionID is replaced
 * @timeout_ms: the whole transaction's time (0: UMC_SA_TIMEOUT_MS)
 * @retries:    resends within it, evenly spaced (the kernel's SA retries)
 * @cb:         called once with the response, -ETIMEDOUT or -ECONNABORTED
 * @ctx:        for @cb
 * @id:         the transaction's id for umc_sa_cancel() (may be NULL); it is
 *              also the TransactionID of the MAD sent
 *
 * An RMPP response is reassembled (ACKs sent, UMC_SA_RMPP_WINDOW segments
 * at a time); each segment that arrives restarts the timeout.
 *
 * Context: any thread, callbacks included; does not block.
 * Returns: 0, or -ENOMEM, -EINVAL (NULL @cb or @mad).
 */
int umc_sa_send(struct umc_sa_client *c, const uint8_t *mad, unsigned timeout_ms,
		unsigned retries, umc_sa_cb cb, void *ctx, uint64_t *id);

/**
 * umc_sa_cancel - stop a transaction; its callback will not run.
 * @c:  the client
 * @id: from umc_sa_send()
 *
 * If the callback is running on the client thread, waits until it
 * returns (unless called from that very callback).
 *
 * Context: any thread; blocks at most for the duration of one callback.
 * Returns: 0 if the transaction was pending (it will never call back), or
 * -ENOENT if it had already completed (its callback has returned).
 */
int umc_sa_cancel(struct umc_sa_client *c, uint64_t id);

/**
 * umc_sa_reregister - the port behaves as after a client reregister (the
 * SM's PortInfo:ClientReregister, IBA 14.4.11): PORT_LOST, every
 * membership gone (a new nonce, so umc-sm drops the old port's), then a
 * new registration and PORT_ACTIVE, on the client's thread.
 * Context: any thread but the client's (and not its callbacks), no lock
 * held; waits until PORT_LOST's callback has returned, at most
 * UMC_SA_PORT_REQ_WAIT_MS.
 * Returns: 0, -ETIMEDOUT (the thread did not get to it: it will), or
 * -EDEADLK on the client's thread.
 */
int umc_sa_reregister(struct umc_sa_client *c);

/**
 * umc_sa_port_down - the port goes down for @ms: UNREGISTER (umc-sm drops
 * its memberships), PORT_LOST with attr.down set, no registration until
 * @ms have passed, then PORT_ACTIVE as after a new registration.
 * Context and returns: as umc_sa_reregister's.
 */
int umc_sa_port_down(struct umc_sa_client *c, unsigned ms);

/* The response of umc_sa_call(), owned by the caller. */
struct umc_sa_result {
	uint16_t status;
	uint8_t mad[UMC_MAD_SIZE];
	uint8_t *data; /* malloc'ed copy of reply->data */
	size_t data_len;
};

/**
 * umc_sa_call - an SA transaction, waiting for its end.
 * @c, @mad, @timeout_ms, @retries: as umc_sa_send()
 * @res: the response (free with umc_sa_result_free())
 *
 * Context: not from a callback; blocks up to the timeout.
 * Returns: 0 (then check res->status), -ETIMEDOUT, -ECONNABORTED, -ENOMEM,
 * -EDEADLK when called from a callback.
 */
int umc_sa_call(struct umc_sa_client *c, const uint8_t *mad, unsigned timeout_ms,
		unsigned retries, struct umc_sa_result *res);

/** umc_sa_result_free - free res->data; @res may be reused. */
void umc_sa_result_free(struct umc_sa_result *res);

/* What a client counted since umc_sa_open() (umc_sa_counters()). */
struct umc_sa_counters {
	uint64_t sent;	      /* SA requests sent a first time */
	uint64_t resent;      /* ... sent again: no response within an interval, or the port
				 registered again */
	uint64_t waited;      /* requests that waited for room in the window before their
				 first send (sa_txn.c) */
	uint64_t responses;   /* response MADs (RMPP: segments) that reached their transaction */
	uint64_t stale;	      /* SA responses of no pending transaction (late, cancelled) */
	uint64_t timeouts;    /* transactions ended with -ETIMEDOUT */
	uint64_t rx_overflow; /* datagrams from the SM the kernel dropped: our socket buffer
				 was full (SO_RXQ_OVFL, socket(7)) */
	uint64_t untrusted;   /* datagrams from the SM's address dropped, and registrations not
				 sent: a process of an untrusted user holds it (sa_trust.h) */
};

/**
 * umc_sa_counters - read the client's counters.
 * @c:   the client
 * @out: filled in
 *
 * rx_overflow is what the kernel reported with the last datagram read, so
 * drops after it show with the next one.
 *
 * Context: any thread.
 */
void umc_sa_counters(struct umc_sa_client *c, struct umc_sa_counters *out);

/**
 * umc_sa_resolve_lid - where a unicast LID receives (the IB link's "switch
 * forwarding" for unicast AHs).
 * @c:    the client
 * @lid:  a unicast LID
 * @data: its data endpoint
 *
 * Results are cached per registration (UMC_SA_LID_CACHE entries).
 *
 * Context: not from a callback; blocks up to UMC_SA_RESOLVE_TIMEOUT_MS.
 * Returns: 0; -ENOENT (no port has @lid, or it has no data endpoint),
 * -ETIMEDOUT, -EINVAL (a multicast or zero LID), -EDEADLK (from a callback).
 */
int umc_sa_resolve_lid(struct umc_sa_client *c, uint16_t lid, struct sockaddr_in *data);

/**
 * umc_sa_fwd_subscribe - the port sends to MLID @mlid: have its forwarding
 * (umc-sm(8) FORWARDING) sent to the fwd callback, now and at each change,
 * also after the port is registered again.
 * @c:    the client
 * @mlid: 0xC000..0xFFFE
 *
 * Subscribing twice is subscribing once.
 *
 * Context: any thread, callbacks included; does not block.
 * Returns: 0 or -ENOMEM.
 */
int umc_sa_fwd_subscribe(struct umc_sa_client *c, uint16_t mlid);

/**
 * umc_sa_fwd_wait - wait until the fwd callback has had a version of
 * @mlid's forwarding (in this registration).
 * @c:          the client
 * @mlid:       subscribed to
 * @timeout_ms: at most this long
 *
 * Context: not from a callback; blocks up to the timeout.
 * Returns: 0; -ETIMEDOUT; -EINVAL (umc-sm refused: not an MLID of its
 * map), -ENOSPC (umc-sm refused: the port's cap of subscriptions), -ENOENT
 * (not subscribed), -EDEADLK (from a callback).
 */
int umc_sa_fwd_wait(struct umc_sa_client *c, uint16_t mlid, unsigned timeout_ms);

/**
 * umc_sa_fwd_unsubscribe - the port no longer sends to @mlid.
 *
 * Context: any thread, callbacks included; does not block.
 */
void umc_sa_fwd_unsubscribe(struct umc_sa_client *c, uint16_t mlid);

/**
 * umc_sa_squatted - tell umc-sm that the port, a member receiving MLID
 * @mlid, cannot bind its IP group and data port (another local socket
 * holds it): umc-sm then forwards @mlid by unicast.  Sent until answered,
 * at most UMC_SA_SQUAT_TRIES times.
 *
 * Context: any thread, any lock held (it takes none); does not block.
 */
void umc_sa_squatted(struct umc_sa_client *c, uint16_t mlid);

#endif /* UMC_SA_CLIENT_H */
