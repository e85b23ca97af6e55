/* SPDX-License-Identifier: MIT */
/*
 * sa_int.h - the SA client's state, shared by sa_client.c (registration,
 * lease, thread, LID resolution), sa_txn.c (MAD transactions, RMPP
 * reassembly, callbacks) and sa_io.c (the transport beneath both).
 *
 * One mutex (c->lock) guards everything below it; the client thread holds
 * it except while it sleeps in poll() and while a callback or an event
 * runs.  c->cond signals the end of a callback (umc_sa_cancel) and
 * RESOLVE answers (umc_sa_resolve_lid).
 */
#ifndef UMC_SA_INT_H
#define UMC_SA_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "sa/sa_client.h"
#include "umc_lock.h"
#include "umc_param.h"
#include "wire/ib.h"
#include "wire/ib_rmpp.h"

struct umc_sa_txn {
	uint64_t tid; /* MAD TransactionID, the id */
	umc_sa_cb cb;
	void *ctx;
	uint8_t mad[UMC_MAD_SIZE];
	unsigned timeout;   /* ms, the whole budget (restarted by RMPP progress) */
	unsigned interval;  /* ms between sends */
	unsigned weight;    /* response datagrams it may have in flight (sa_txn.c) */
	bool queued;	    /* on c->queue: not sent yet */
	uint64_t heard;	    /* the SA's responses so far when it was first sent */
	uint64_t deadline;  /* -ETIMEDOUT at this time (queued: see sa_txn.c) */
	uint64_t resend_at; /* next send */
	bool sent;	    /* sent once (or not, by an injected fault) */
	uint16_t reject;    /* an injected fault's status: answered so at resend_at */
	struct umc_rmpp_rx rx;
	struct umc_sa_txn *hnext;	/* bucket chain */
	struct umc_sa_txn *prev, *next; /* on c->sent or c->queue */
};

/* A list of transactions, in the order they were added. */
struct umc_sa_txn_list {
	struct umc_sa_txn *head, *tail;
};

struct umc_sa_resolve_wait {
	uint16_t lid;
	uint32_t ptid; /* tid of the RESOLVE datagram in flight */
	bool done;
	int err;
	struct sockaddr_in ep;
	struct umc_sa_resolve_wait *next;
};

struct umc_sa_sub;
struct umc_sa_squat;

struct umc_sa_lid_entry {
	uint16_t lid; /* 0: free */
	struct sockaddr_in ep;
};

struct umc_sa_client {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fd;	     /* UDP, connected to the SM: our control endpoint */
	int diag_fd; /* sock_diag, when the SM's address is this host's: its holder; else -1 */
	struct sockaddr_in local; /* fd's own address */
	uint64_t sm_inode;	  /* the socket of the SM's address last found trusted, 0: none */
	int wake_fd; /* eventfd: a new timer or stop for the thread */
	pthread_t thread;
	bool thread_started;
	bool stopping;
	struct sockaddr_in sm, data;
	uint64_t nonce;	   /* of the current registration */
	uint64_t req_guid; /* GUID to ask for when registering */
	struct umc_sa_port_attr attr;
	uint64_t old_epoch; /* replies from the SM we left are ignored */
	uint32_t next_ptid; /* SM-protocol tids */
	uint32_t tid_hi;    /* MAD TransactionIDs: tid_hi << 32 | counter */
	uint32_t tid_lo;
	uint32_t reg_ptid;  /* tid of our REGISTER in flight */
	uint64_t next_register, next_renew, last_renewed; /* ms */
	uint64_t next_timer; /* earliest resend or deadline of a transaction */
	struct umc_sa_txn *buckets[UMC_SA_TXN_BUCKETS]; /* every transaction, by tid */
	struct umc_sa_txn_list sent;  /* sent, awaiting the response: the timer's */
	struct umc_sa_txn_list queue; /* waiting for room in the window (sa_txn.c) */
	unsigned ntxns;
	unsigned window;      /* the weights of c->sent */
	uint64_t last_reply;  /* ms: the SA's last response */
	uint64_t queue_check; /* ms: when a queued transaction may expire */
	struct umc_sa_counters cnt;
	uint64_t calling; /* tid whose callback runs now, 0: none */
	void (*event)(void *ctx, enum umc_sa_event ev);
	void (*fwd)(void *ctx, const struct umc_sa_fwd *f);
	void *event_ctx; /* for both */
	struct umc_sa_sub *subs;     /* MLIDs subscribed to (sa_fwd.c) */
	uint64_t next_sub_id;
	struct umc_sa_squat *squats; /* SQUATTED reports not answered yet */
	/* MLIDs reported by umc_sa_squatted(), lock-free, not yet on @squats. */
	_Atomic uint64_t squat_new[(UMC_LID_PERMISSIVE + 1 - UMC_MLID_FIRST) / 64];
	atomic_bool squat_any;
	enum umc_sa_fault (*fault)(void *ctx, const uint8_t *mad, bool first, uint16_t *status);
	void *fault_ctx;
	bool rereg_req;	     /* umc_sa_reregister asked: the thread loses the port */
	uint64_t down_until; /* umc_sa_port_down: no registration before then (ms) */
	bool down_req;	     /* ... asked: the thread takes the port down */
	unsigned port_reqs;  /* requests the thread has carried out, events raised */
	struct umc_sa_resolve_wait *resolves;
	struct umc_sa_lid_entry lid_cache[UMC_SA_LID_CACHE];
	unsigned lid_cache_next;
};

/*
 * sa_io.c, beneath both files below: the transport.
 *
 * umc_sa_now_ms - the client's clock: CLOCK_MONOTONIC in milliseconds.
 * umc_sa_ptid - a new non-zero SM-protocol tid; lock held.
 * umc_sa_xmit - send one message to the SM as this port: its LID, epoch
 * and (if 0) tid are filled in; lock held, or the client not yet shared.
 * umc_sa_wake - wake the client thread (a new timer, or stop).
 */
uint64_t umc_sa_now_ms(void);
uint32_t umc_sa_ptid(struct umc_sa_client *c);
void umc_sa_xmit(struct umc_sa_client *c, struct umc_sm_msg *m);
void umc_sa_wake(struct umc_sa_client *c);

/*
 * sa_fwd.c, which sa_client.c drives; all with c->lock held:
 * umc_sa_fwd_on_forward - a FORWARD (the callback may run, the lock dropped);
 * umc_sa_fwd_on_reply - an UNSUBSCRIBE or SQUATTED reply;
 * umc_sa_fwd_timers - resends; the next time they need the thread;
 * umc_sa_fwd_lost - the port was lost: every version forgotten;
 * umc_sa_fwd_registered - registered again: subscribe again;
 * umc_sa_fwd_free_all - at close.
 */
void umc_sa_fwd_on_forward(struct umc_sa_client *c, const struct umc_sm_msg *m);
void umc_sa_fwd_on_reply(struct umc_sa_client *c, const struct umc_sm_msg *m);
uint64_t umc_sa_fwd_timers(struct umc_sa_client *c, uint64_t now);
void umc_sa_fwd_lost(struct umc_sa_client *c);
void umc_sa_fwd_registered(struct umc_sa_client *c, uint64_t now);
void umc_sa_fwd_free_all(struct umc_sa_client *c);

/* sa_txn.c, which sa_client.c drives; all with c->lock held */
void umc_sa_txn_init(struct umc_sa_client *c);
void umc_sa_txn_on_reply(struct umc_sa_client *c, const uint8_t *mad, uint64_t now);
uint64_t umc_sa_txn_timers(struct umc_sa_client *c, uint64_t now);
void umc_sa_txn_resend_all(struct umc_sa_client *c, uint64_t now);
void umc_sa_txn_free_all(struct umc_sa_client *c);

#endif /* UMC_SA_INT_H */
