// SPDX-License-Identifier: MIT
/*
 * sa_fwd.c - the SA client's side of multicast forwarding (umc-sm(8)
 * FORWARDING; wire/sm_proto.h SUBSCRIBE, FORWARD, FWD_ACK, UNSUBSCRIBE,
 * SQUATTED): the MLIDs the port sends to, their forwarding as umc-sm
 * sends it, and the squatted groups it reports.
 *
 * A subscription sends SUBSCRIBE until the first FORWARD answers it
 * (every UMC_SA_REGISTER_RESEND_MS).  A FORWARD comes in segments: they
 * are put together per version, and a version older than the one in use
 * is never taken (a late or repeated datagram), only acknowledged again.
 * A whole version goes to the port's fwd callback, on the client thread
 * with no lock held; once the callback has returned, the port sends by
 * it, and the client acknowledges it (FWD_ACK): umc-sm may then tell a
 * member that its join or leave is done.  The port lost (PORT_LOST), the
 * versions are forgotten; registered again, every MLID is subscribed to
 * again.  A SQUATTED report is sent until umc-sm answers it, at most
 * UMC_SA_SQUAT_TRIES times.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sa/sa_int.h"
#include "umc_int.h"

struct umc_sa_sub {
	uint16_t mlid;
	uint64_t id;	    /* this subscription's, never reused (c->next_sub_id) */
	uint32_t ptid;	    /* SUBSCRIBE's while unanswered, else 0 */
	uint64_t resend_at; /* ... sent again then */
	uint32_t version;   /* in use (0: none yet) */
	int err;	    /* umc-sm refused it: -EINVAL, -ENOSPC */
	/* The version being put together from its segments. */
	uint32_t asm_version;
	uint8_t asm_kind;
	uint16_t asm_total;
	unsigned asm_have; /* entries arrived */
	uint8_t asm_seen[(UINT16_MAX / UMC_SM_FWD_SEG + 8) / 8]; /* segments arrived */
	struct umc_sm_fwd_entry *asm_e;
	struct umc_sa_sub *next;
};

struct umc_sa_squat {
	uint16_t mlid;
	uint32_t ptid;
	unsigned tries;
	uint64_t resend_at;
	struct umc_sa_squat *next;
};

static struct umc_sa_sub *sub_find(struct umc_sa_client *c, uint16_t mlid)
{
	struct umc_sa_sub *s;

	for (s = c->subs; s && s->mlid != mlid; s = s->next)
		;
	return s;
}

static void sub_unlink(struct umc_sa_client *c, struct umc_sa_sub *s)
{
	struct umc_sa_sub **pp = &c->subs;

	while (*pp != s)
		pp = &(*pp)->next;
	*pp = s->next;
	free(s->asm_e);
	free(s);
}

static void send_mlid(struct umc_sa_client *c, uint8_t type, uint16_t mlid, uint32_t ptid)
{
	struct umc_sm_msg m = { .hdr = { .type = type, .tid = ptid }, .mlid = mlid };

	umc_sa_xmit(c, &m);
}

/* SUBSCRIBE @s now, and again until answered. */
static void sub_send(struct umc_sa_client *c, struct umc_sa_sub *s, uint64_t now)
{
	if (!s->ptid)
		s->ptid = umc_sa_ptid(c);
	send_mlid(c, UMC_SM_SUBSCRIBE, s->mlid, s->ptid);
	s->resend_at = now + UMC_SA_REGISTER_RESEND_MS;
}

int umc_sa_fwd_subscribe(struct umc_sa_client *c, uint16_t mlid)
{
	struct umc_sa_sub *s;

	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	s = sub_find(c, mlid);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			umc_mutex_unlock(&c->lock);
			return -ENOMEM;
		}
		s->mlid = mlid;
		s->id = ++c->next_sub_id;
		s->next = c->subs;
		c->subs = s;
		if (c->attr.active)
			sub_send(c, s, umc_sa_now_ms());
		/* else sent once registered (umc_sa_fwd_registered) */
	}
	umc_mutex_unlock(&c->lock);
	umc_sa_wake(c); /* its resend timer */
	return 0;
}

int umc_sa_fwd_wait(struct umc_sa_client *c, uint16_t mlid, unsigned timeout_ms)
{
	uint64_t end = umc_sa_now_ms() + timeout_ms;
	struct umc_sa_sub *s;
	struct timespec ts;
	int cancel, ret;

	if (c->thread_started && pthread_equal(pthread_self(), c->thread))
		return -EDEADLK;
	/* Bounded by the timeout; no cancellation point with c->lock held. */
	cancel = umc_cancel_off();
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	while ((s = sub_find(c, mlid)) && !s->version && !s->err && umc_sa_now_ms() < end) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L; /* the clock is checked at least every 50 ms */
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	}
	ret = !s ? -ENOENT : s->version ? 0 : s->err ? s->err : -ETIMEDOUT;
	umc_mutex_unlock(&c->lock);
	umc_cancel_restore(cancel);
	return ret;
}

void umc_sa_fwd_unsubscribe(struct umc_sa_client *c, uint16_t mlid)
{
	struct umc_sa_sub *s;

	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	s = sub_find(c, mlid);
	if (s) {
		sub_unlink(c, s);
		if (c->attr.active)
			send_mlid(c, UMC_SM_UNSUBSCRIBE, mlid, 0);
	}
	umc_mutex_unlock(&c->lock);
}

/*
 * Called with a device's locks held, which rank after the client's: no
 * lock here, a bit for the thread to find (squat_take).
 */
void umc_sa_squatted(struct umc_sa_client *c, uint16_t mlid)
{
	unsigned i = (unsigned)(mlid - UMC_MLID_FIRST);

	if (mlid < UMC_MLID_FIRST || mlid == UMC_LID_PERMISSIVE)
		return;
	atomic_fetch_or(&c->squat_new[i / 64], 1ULL << (i % 64));
	atomic_store(&c->squat_any, true);
	umc_sa_wake(c);
}

/* The MLIDs umc_sa_squatted() marked, onto c->squats (sent at once); lock held. */
static void squat_take(struct umc_sa_client *c, uint64_t now)
{
	if (!atomic_exchange(&c->squat_any, false))
		return;
	for (unsigned w = 0; w < sizeof(c->squat_new) / sizeof(c->squat_new[0]); w++) {
		uint64_t bits = atomic_exchange(&c->squat_new[w], 0);

		while (bits) {
			uint16_t mlid = (uint16_t)(UMC_MLID_FIRST + w * 64 + (unsigned)__builtin_ctzll(bits));
			struct umc_sa_squat *q;

			bits &= bits - 1;
			for (q = c->squats; q && q->mlid != mlid; q = q->next)
				;
			if (q || !(q = calloc(1, sizeof(*q))))
				continue; /* reported already; or no memory: the member stays without */
			q->mlid = mlid;
			q->resend_at = now;
			q->next = c->squats;
			c->squats = q;
		}
	}
}

/* ------------------------------------------------------------------------- */
/* The client thread's side, with c->lock held.                             */

/* Start putting version @f->version of @s together. */
static int asm_start(struct umc_sa_sub *s, const struct umc_sm_fwd *f)
{
	struct umc_sm_fwd_entry *e = NULL;

	if (f->total && !(e = calloc(f->total, sizeof(*e))))
		return -ENOMEM;
	free(s->asm_e);
	s->asm_e = e;
	s->asm_version = f->version;
	s->asm_kind = f->kind;
	s->asm_total = f->total;
	s->asm_have = 0;
	memset(s->asm_seen, 0, sizeof(s->asm_seen));
	return 0;
}

static void send_ack(struct umc_sa_client *c, uint16_t mlid, uint32_t version)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_FWD_ACK }, .ack = { mlid, version } };

	umc_sa_xmit(c, &m);
}

/*
 * A whole version of @s: the port takes it (the callback runs with the
 * lock dropped), then it counts as the one in use and is acknowledged.
 * @s may be gone (unsubscribed) by then.
 */
static void deliver(struct umc_sa_client *c, struct umc_sa_sub *s)
{
	uint64_t id = s->id;
	struct umc_sa_fwd f = {
		.mlid = s->mlid,
		.unicast = s->asm_kind == UMC_SM_FWD_UNICAST,
		.version = s->asm_version,
		.n = s->asm_total,
		.e = s->asm_e,
	};

	s->asm_e = NULL; /* the callback's until it returns */
	s->asm_version = 0;
	if (c->fwd) {
		umc_mutex_unlock(&c->lock);
		c->fwd(c->event_ctx, &f);
		umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	}
	free((void *)f.e);
	/* In use now: a waiter (umc_sa_fwd_wait) may send by it, umc-sm may rely on it. */
	if ((s = sub_find(c, f.mlid)) && s->id == id && f.version > s->version)
		s->version = f.version;
	send_ack(c, f.mlid, f.version);
	pthread_cond_broadcast(&c->cond);
}

void umc_sa_fwd_on_forward(struct umc_sa_client *c, const struct umc_sm_msg *m)
{
	const struct umc_sm_fwd *f = &m->fwd;
	struct umc_sa_sub *s = sub_find(c, f->mlid);
	unsigned seg;

	if (!s) {
		/* Not (or no longer) ours: umc-sm missed an UNSUBSCRIBE. */
		send_mlid(c, UMC_SM_UNSUBSCRIBE, f->mlid, 0);
		return;
	}
	if (m->hdr.status != UMC_SM_OK) {
		if (s->ptid && m->hdr.tid == s->ptid) {
			s->err = m->hdr.status == UMC_SM_INVALID ? -EINVAL : -ENOSPC;
			s->ptid = 0;
			pthread_cond_broadcast(&c->cond);
		}
		return;
	}
	s->ptid = 0; /* answered */
	s->err = 0;
	if (f->version <= s->version) {
		send_ack(c, f->mlid, f->version); /* our acknowledgment was lost */
		return;
	}
	if ((f->version != s->asm_version || f->kind != s->asm_kind || f->total != s->asm_total) &&
	    asm_start(s, f))
		return; /* out of memory: umc-sm sends it again */
	seg = f->offset / UMC_SM_FWD_SEG;
	if (s->asm_seen[seg / 8] & (1u << (seg % 8)))
		return;
	s->asm_seen[seg / 8] |= (uint8_t)(1u << (seg % 8));
	for (unsigned i = 0; i < f->count; i++)
		umc_sm_fwd_entry_get(f, i, &s->asm_e[f->offset + i]);
	s->asm_have += f->count;
	if (s->asm_have == s->asm_total)
		deliver(c, s);
}

void umc_sa_fwd_on_reply(struct umc_sa_client *c, const struct umc_sm_msg *m)
{
	struct umc_sa_squat **pp, *q;

	if (m->hdr.type != UMC_SM_SQUATTED_REPLY)
		return; /* UNSUBSCRIBE's: nothing waits for it */
	for (pp = &c->squats; (q = *pp); pp = &q->next)
		if (q->ptid && q->ptid == m->hdr.tid) {
			*pp = q->next;
			free(q);
			return;
		}
}

uint64_t umc_sa_fwd_timers(struct umc_sa_client *c, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	struct umc_sa_squat **pp, *q;

	if (!c->attr.active)
		return next;
	squat_take(c, now);
	for (struct umc_sa_sub *s = c->subs; s; s = s->next) {
		if (!s->ptid || s->err)
			continue;
		if (now >= s->resend_at)
			sub_send(c, s, now);
		if (s->resend_at < next)
			next = s->resend_at;
	}
	for (pp = &c->squats; (q = *pp);) {
		if (now >= q->resend_at) {
			if (q->tries++ == UMC_SA_SQUAT_TRIES) {
				*pp = q->next; /* umc-sm does not answer: the port gave what it could */
				free(q);
				continue;
			}
			q->ptid = umc_sa_ptid(c);
			send_mlid(c, UMC_SM_SQUATTED, q->mlid, q->ptid);
			q->resend_at = now + UMC_SA_REGISTER_RESEND_MS;
		}
		if (q->resend_at < next)
			next = q->resend_at;
		pp = &q->next;
	}
	return next;
}

void umc_sa_fwd_lost(struct umc_sa_client *c)
{
	for (struct umc_sa_sub *s = c->subs; s; s = s->next) {
		s->version = 0;
		s->err = 0;
		s->ptid = 0;
		s->asm_version = 0;
	}
}

void umc_sa_fwd_registered(struct umc_sa_client *c, uint64_t now)
{
	for (struct umc_sa_sub *s = c->subs; s; s = s->next) {
		s->ptid = 0;
		sub_send(c, s, now);
	}
}

void umc_sa_fwd_free_all(struct umc_sa_client *c)
{
	while (c->subs)
		sub_unlink(c, c->subs);
	while (c->squats) {
		struct umc_sa_squat *q = c->squats;

		c->squats = q->next;
		free(q);
	}
}
