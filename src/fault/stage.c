// SPDX-License-Identifier: MIT
/*
 * stage.c - the fault stages of every device (stage.h): the rules in force,
 * each rule's stream on each device, and the datagrams held back.
 *
 * A device gets its struct umc_fault_dev with the first rules put in
 * force, and keeps it.  Its flags (dev->fault_on) say whether the receive
 * and the send stage must look at datagrams at all: they are set while a
 * direction has rules, holds datagrams, or the port is down.
 *
 * Held datagrams.  A datagram delayed (delay=) or held back (reorder=) is
 * copied: its payload, and for a send its address handle (the link's part
 * included: it is flat), so that nothing refers to a buffer the
 * application or the link reuses.  A received one is delivered by the
 * engine's next pass once due (umc_fault_rx_due), or, when nothing runs
 * the engine, by the control thread (umc_fault_tick), which wakes for it
 * (umc_fault_wake_fd); its group and sending QP are looked up again by
 * MGID and QPN then.  A sent one goes out on its own QP, looked up by its
 * number: a QP destroyed meanwhile takes what it holds with it.  A
 * datagram held back by reorder= goes right after the DEPTH-th later one
 * the rule passes on, or UMC_FAULT_REORDER_MAX_US after it was held when
 * fewer come.  A device holds at most UMC_FAULT_HOLD_MAX per direction;
 * beyond that a datagram is lost (fault_hold_full), as from a full queue.
 *
 * Locks (umc_lock.h): a device's fault lock (fd->lock, UMC_LOCK_FAULT) is
 * taken under dev->rx_lock (installing rules), dev->lock (the control thread, a QP
 * going), a QP's sq_lock (the send stage) and the SA client's lock.  The
 * rules pointer changes under both rx_lock and fd->lock; the receive
 * stage reads it under rx_lock, the others under fd->lock.  A rule's
 * stream is used only by its own direction's stage, under that lock; so
 * are the held datagrams of each direction (rx_lock: received, fd->lock:
 * sent).  The flags change by atomic bit operations.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "fault/stage.h"
#include "verbs/verbs_int.h"
#include "wire/be.h"
#include "wire/ib_mad.h"
#include "wire/sg.h"

/* The rules in force, as parsed, with their seed and canonical text. */
struct umc_fault_rules {
	struct umc_fault_spec spec;
	unsigned dirs; /* bit d: some rule acts in direction d */
	char canon[UMC_FAULT_SPEC_MAX + 32];
};

/* A datagram held back: what both directions' queues keep of it. */
struct held {
	struct held *prev, *next; /* the queue, by due time */
	uint64_t due;		  /* us */
	int rule;		  /* reorder: the rule that holds it; -1 for delay */
	int copies;		  /* delivered or sent this many times (2 with dup=) */
};

/* One direction's datagrams held back, by due time. */
struct held_queue {
	struct held *head;
	struct held *by_rule[UMC_FAULT_MAX_RULES]; /* the one each reorder rule holds */
	unsigned n;
};

/* A received datagram held back. */
struct rx_held {
	struct held q;
	bool group;		     /* a group's datagram: @mgid finds it again */
	union ibv_gid mgid;
	uint32_t sender_qpn;	     /* pkt.sender's number, 0: none */
	int32_t filter;		     /* the QPs it goes to (umc_fault_deliver_fn) */
	struct umc_rx_pkt pkt;	     /* payload -> @data */
	uint8_t data[];
};

/* A sent datagram held back. */
struct tx_held {
	struct held q;
	uint32_t qpn;		     /* the QP that sends it */
	struct umc_tx_pkt pkt;	     /* sge -> @sge, ah -> the copy after the payload */
	struct ibv_sge sge;
	uint8_t data[];		     /* payload, then the AH (ah_size bytes, aligned) */
};

struct umc_fault_dev {
	pthread_mutex_t lock;
	const struct umc_fault_rules *rules;
	struct umc_fault_stream stream[UMC_FAULT_MAX_RULES];
	struct held_queue rx, tx; /* under rx_lock, under lock */
	bool port_down;
};

/* Installs are serialized; the rules in force for devices found later. */
static pthread_mutex_t umc_fault_set_lock = PTHREAD_MUTEX_INITIALIZER;
static struct umc_fault_rules *umc_fault_rules;
static int umc_fault_efd = -1; /* the control thread's wake-up (umc_fault_wake_fd) */

/* In a child of fork: the eventfd was the parent's (the child closes it); its thread's too. */
static void umc_fault_forked(void)
{
	umc_fault_efd = -1;
}

UMC_ATFORK_MUTEX(umc_fault_set_lock, UMC_LOCK_FAULT_SET, umc_fault_forked)

uint64_t umc_fault_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int umc_fault_wake_fd(void)
{
	return umc_fault_efd;
}

/* Something is due sooner than the control thread may think: wake it. */
static void wake(void)
{
	uint64_t one = 1;

	if (umc_fault_efd >= 0 && umc_sys_write(umc_fault_efd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: it is awake */
	}
}

static void flag_set(struct umc_device *dev, unsigned char bit, bool on)
{
	if (on)
		atomic_fetch_or_explicit(&dev->fault_on, bit, memory_order_relaxed);
	else
		atomic_fetch_and_explicit(&dev->fault_on, (unsigned char)~bit, memory_order_relaxed);
}

/*
 * A stage must look at @dev's datagrams of a direction while it has rules
 * there, holds datagrams, or the port is down.  Context: for @rx, rx_lock
 * held (the receive queue's lock); for @tx, fd->lock held.
 */
static void flags_update(struct umc_device *dev, struct umc_fault_dev *fd, bool rx, bool tx)
{
	const struct umc_fault_rules *r = fd->rules;

	if (rx)
		flag_set(dev, UMC_FAULT_ON_RX,
			 fd->port_down || fd->rx.n || (r && (r->dirs & 1u << UMC_FAULT_RX)));
	if (tx)
		flag_set(dev, UMC_FAULT_ON_TX,
			 fd->port_down || fd->tx.n || (r && (r->dirs & 1u << UMC_FAULT_TX)));
}

/* Make @dev's state if it has none.  Context: rx_lock held (so no stage runs). */
static struct umc_fault_dev *fault_dev(struct umc_device *dev)
{
	struct umc_fault_dev *fd = dev->fault;

	if (fd)
		return fd;
	fd = calloc(1, sizeof(*fd));
	if (!fd)
		return NULL;
	pthread_mutex_init(&fd->lock, NULL);
	__atomic_store_n(&dev->fault, fd, __ATOMIC_RELEASE);
	return fd;
}

/* Put @r in force on @dev, streams from the start.  Context: rx_lock and fd->lock held. */
static void install(struct umc_device *dev, struct umc_fault_dev *fd, const struct umc_fault_rules *r)
{
	fd->rules = r;
	memset(fd->stream, 0, sizeof(fd->stream));
	for (int i = 0; r && i < r->spec.nrules; i++)
		umc_fault_stream_init(&fd->stream[i], r->spec.seed, i, dev->ibdev.name);
	flags_update(dev, fd, true, true);
}

static uint64_t random_seed(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = umc_fault_now_us() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	return v;
}

int umc_fault_set(const char *text, bool devices, char *canon, size_t canon_size,
		  char err[UMC_FAULT_ERR_MAX])
{
	struct umc_fault_rules *r = calloc(1, sizeof(*r)), *old;
	struct umc_device **devs;
	int ret, n = 0;

	if (!r)
		return -ENOMEM;
	ret = umc_fault_spec_parse(text, &r->spec, err);
	if (ret) {
		free(r);
		return ret;
	}
	if (!r->spec.has_seed)
		r->spec.seed = random_seed();
	for (int i = 0; i < r->spec.nrules; i++)
		r->dirs |= 1u << r->spec.rule[i].dir;
	umc_fault_spec_format(&r->spec, true, r->canon, sizeof(r->canon));
	if (canon)
		snprintf(canon, canon_size, "%s", r->spec.nrules ? r->canon : "");
	if (!r->spec.nrules) {
		free(r);
		r = NULL;
	}
	/*
	 * The list first: a probe under way registers devices, which take
	 * this lock (umc_fault_dev_init); any found after this see @r.
	 */
	if (devices)
		n = umc_devices(&devs);
	umc_mutex_lock(&umc_fault_set_lock, UMC_LOCK_FAULT_SET);
	if (umc_fault_efd < 0)
		umc_fault_efd = UMC_FD_NEW(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), false);
	old = umc_fault_rules;
	umc_fault_rules = r;
	if (devices)
		n = umc_devices(&devs); /* no lock now: the first call saw the list built */
	for (int d = 0; d < n; d++) {
		struct umc_device *dev = devs[d];
		struct umc_fault_dev *fd;

		umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
		fd = r ? fault_dev(dev) : dev->fault;
		if (fd) {
			umc_mutex_lock(&fd->lock, UMC_LOCK_FAULT);
			install(dev, fd, r);
			umc_mutex_unlock(&fd->lock);
		}
		umc_mutex_unlock(&dev->rx_lock);
	}
	umc_mutex_unlock(&umc_fault_set_lock);
	free(old); /* no stage can reach it: every device's pointer changed under its locks */
	wake();
	return 0;
}

void umc_fault_dev_init(struct umc_device *dev)
{
	/* Under the device list lock, before the device is published: no stage runs on it. */
	umc_mutex_lock(&umc_fault_set_lock, UMC_LOCK_FAULT_SET);
	if (umc_fault_rules) {
		struct umc_fault_dev *fd = fault_dev(dev);

		if (fd)
			install(dev, fd, umc_fault_rules);
	}
	umc_mutex_unlock(&umc_fault_set_lock);
}

/* ------------------------------------------------------------------------- */
/* Counting: on the device, and on the group (@g, NULL: none) too.          */

#define FCNT(dev, g, name)                                                                         \
	do {                                                                                       \
		CNT(dev, name);                                                                    \
		if (g)                                                                             \
			GCNT(g, name);                                                             \
	} while (0)

static void count_fate(struct umc_device *dev, struct umc_grp_counters *g, enum umc_fault_fate fate)
{
	switch (fate) {
	case UMC_FAULT_DROP:
		FCNT(dev, g, fault_drop);
		break;
	case UMC_FAULT_DROP_NTH:
		FCNT(dev, g, fault_drop_nth);
		break;
	case UMC_FAULT_BURST:
		FCNT(dev, g, fault_burst);
		break;
	case UMC_FAULT_CORRUPT:
		FCNT(dev, g, fault_corrupt);
		break;
	default:
		break;
	}
}

/* A received packet's group counters, or NULL. */
static struct umc_grp_counters *rx_grp(const struct umc_rx_pkt *pkt)
{
	return pkt->mcg ? pkt->mcg->gcnt : NULL;
}

/* ------------------------------------------------------------------------- */
/* Receive.                                                                  */

/* Does QP @qpn of @mcg take its datagrams (rx qpn= on a group's datagram)? */
static bool mcg_has_qp(const struct umc_mcg *mcg, uint32_t qpn)
{
	for (int i = 0; mcg && i < mcg->nqp; i++)
		if (mcg->qps[i]->ibqp.qp_num == qpn)
			return true;
	return false;
}

/*
 * The first rx rule selecting @pkt on @dev; *@filter: 0, or for a rule
 * with qpn= on a group's datagram, that QP (its copy alone is acted on).
 */
static int rx_match(struct umc_device *dev, const struct umc_fault_rules *rules,
		    const struct umc_rx_pkt *pkt, uint32_t *filter)
{
	const uint8_t *mgid = pkt->mcg ? pkt->mcg->mgid.raw : NULL;
	bool mcast = pkt->hdr.bth.dest_qpn == UMC_MCAST_QPN;

	*filter = 0;
	for (int i = 0; i < rules->spec.nrules; i++) {
		const struct umc_fault_rule *r = &rules->spec.rule[i];

		if (r->dir != UMC_FAULT_RX || !umc_fault_group_match(r, mcast ? mgid : NULL))
			continue;
		if ((r->words & UMC_FW_DEV) && strcmp(r->dev, dev->ibdev.name))
			continue;
		if (r->words & UMC_FW_QPN) {
			if (mcast ? !mcg_has_qp(pkt->mcg, r->qpn) : r->qpn != pkt->hdr.bth.dest_qpn)
				continue;
			if (mcast)
				*filter = r->qpn;
		}
		return i;
	}
	return -1;
}

static void held_unlink(struct held_queue *q, struct held *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		q->head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	if (h->rule >= 0 && q->by_rule[h->rule] == h)
		q->by_rule[h->rule] = NULL;
	q->n--;
}

/* Insert @h by due time (after those due at the same time: order kept); wake if first. */
static void held_link(struct held_queue *q, struct held *h)
{
	struct held **pp = &q->head, *prev = NULL;

	while (*pp && (*pp)->due <= h->due) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	h->prev = prev;
	h->next = *pp;
	if (*pp)
		(*pp)->prev = h;
	*pp = h;
	q->n++;
	if (h->rule >= 0)
		q->by_rule[h->rule] = h;
	if (q->head == h)
		wake();
}

/* The first of @q, due soonest, if due at @now. */
static struct held *held_due(const struct held_queue *q, uint64_t now)
{
	return q->head && q->head->due <= now ? q->head : NULL;
}

/*
 * A copy of @pkt for the QPs @filter names, payload included, that refers
 * to nothing of the link's or the lent receives'; NULL (counted
 * fault_hold_full) when the device holds its most already or memory is
 * short.
 */
static struct rx_held *rx_copy(struct umc_device *dev, struct umc_fault_dev *fd,
			       const struct umc_rx_pkt *pkt, int32_t filter)
{
	struct rx_held *h = NULL;

	if (fd->rx.n < UMC_FAULT_HOLD_MAX)
		h = malloc(sizeof(*h) + pkt->len);
	if (!h) {
		FCNT(dev, rx_grp(pkt), fault_hold_full);
		return NULL;
	}
	h->pkt = *pkt;
	h->filter = filter;
	h->q.copies = 1;
	h->group = pkt->mcg != NULL;
	if (h->group)
		h->mgid = pkt->mcg->mgid;
	h->sender_qpn = pkt->sender ? pkt->sender->ibqp.qp_num : 0;
	if (pkt->land) {
		struct umc_sg sg = {pkt->land->iov, pkt->land->niov, pkt->land->room};

		umc_sg_read(&sg, pkt->land_off, h->data, pkt->len);
	} else {
		memcpy(h->data, pkt->payload, pkt->len);
	}
	h->pkt.payload = h->data;
	h->pkt.land = NULL;
	h->pkt.land_off = 0;
	h->pkt.mcg = NULL;
	h->pkt.sender = NULL;
	return h;
}

/*
 * Hold a copy of @pkt back until @due (@rule: reorder's, or -1), to be
 * delivered @copies times then; false when none could be made.
 */
static bool rx_hold(struct umc_device *dev, struct umc_fault_dev *fd, const struct umc_rx_pkt *pkt,
		    int32_t filter, uint64_t due, int rule, int copies)
{
	struct rx_held *h = rx_copy(dev, fd, pkt, filter);

	if (!h)
		return false;
	h->q.copies = copies;
	h->q.due = due;
	h->q.rule = rule;
	held_link(&fd->rx, &h->q);
	return true;
}

/* Deliver held @h, which is off the queue, and free it.  Context: rx_lock. */
static void rx_release(struct umc_device *dev, struct rx_held *h, umc_fault_deliver_fn deliver)
{
	/* What it referred to may be gone: find it again. */
	h->pkt.mcg = h->group ? __umc_mcg_find(dev, &h->mgid) : NULL;
	h->pkt.sender = h->sender_qpn ? __umc_qp_by_num(dev, h->sender_qpn) : NULL;
	for (int i = 0; i < h->q.copies; i++) /* the payload is the copy's own: read it again */
		deliver(dev, &h->pkt, h->filter);
	free(h);
}

void umc_fault_rx_due(struct umc_device *dev, umc_fault_deliver_fn deliver)
{
	struct umc_fault_dev *fd = dev->fault;
	struct held *h;
	uint64_t now;

	if (!fd || !fd->rx.head)
		return;
	now = umc_fault_now_us();
	while ((h = held_due(&fd->rx, now))) {
		held_unlink(&fd->rx, h);
		rx_release(dev, (struct rx_held *)h, deliver);
	}
	flags_update(dev, fd, true, false);
}

void umc_fault_rx(struct umc_device *dev, const struct umc_rx_pkt *pkts, int n,
		  umc_fault_deliver_fn deliver)
{
	struct umc_fault_dev *fd = dev->fault;
	const struct umc_fault_rules *rules = fd->rules;
	uint64_t now = umc_fault_now_us();

	umc_fault_rx_due(dev, deliver);
	for (int i = 0; i < n; i++) {
		const struct umc_rx_pkt *pkt = &pkts[i];
		struct umc_fault_verdict v;
		uint32_t filter;
		int32_t mine; /* the copy the rule acts on: all, or QP filter's */
		int r;

		if (fd->port_down) {
			FCNT(dev, rx_grp(pkt), fault_port_down);
			continue;
		}
		r = rules ? rx_match(dev, rules, pkt, &filter) : -1;
		if (r < 0) {
			deliver(dev, pkt, 0);
			continue;
		}
		umc_fault_decide(&rules->spec.rule[r], &fd->stream[r], &v);
		mine = (int32_t)filter;
		if (v.fate != UMC_FAULT_PASS) {
			count_fate(dev, rx_grp(pkt), v.fate);
			if (filter)
				deliver(dev, pkt, -mine); /* the other QPs' copies */
		} else if (v.hold || v.delay_us) {
			/* Copied before anything is delivered from the lent receive. */
			if (v.hold ? rx_hold(dev, fd, pkt, mine, now + UMC_FAULT_REORDER_MAX_US, r,
					     1 + v.dup)
				   : rx_hold(dev, fd, pkt, mine, now + v.delay_us, -1, 1 + v.dup)) {
				if (v.hold)
					FCNT(dev, rx_grp(pkt), fault_reorder);
				else
					FCNT(dev, rx_grp(pkt), fault_delay);
				if (v.dup)
					FCNT(dev, rx_grp(pkt), fault_dup);
			}
			if (filter)
				deliver(dev, pkt, -mine);
		} else if (v.dup) {
			struct rx_held *twin = rx_copy(dev, fd, pkt, mine);

			deliver(dev, pkt, 0);
			if (twin) {
				FCNT(dev, rx_grp(pkt), fault_dup);
				rx_release(dev, twin, deliver);
			}
		} else {
			deliver(dev, pkt, 0);
		}
		if (v.release && fd->rx.by_rule[r]) {
			struct held *h = fd->rx.by_rule[r];

			held_unlink(&fd->rx, h);
			rx_release(dev, (struct rx_held *)h, deliver);
		}
	}
	flags_update(dev, fd, true, false);
}

/* ------------------------------------------------------------------------- */
/* Send.                                                                     */

/* The group @pkt goes to (its AH's multicast DGID, ::ffff:224/4 on RoCE), or NULL. */
static const uint8_t *tx_mgid(const struct umc_tx_pkt *pkt)
{
	const struct ibv_ah_attr *a = &pkt->ah->attr;

	return a->is_global && umc_gid_is_multicast(&a->grh.dgid) ? a->grh.dgid.raw : NULL;
}

/* Copy @pkt of @qp to be sent @copies times at @due.  Context: fd->lock held. */
static bool tx_hold(struct umc_qp *qp, struct umc_fault_dev *fd, const struct umc_tx_pkt *pkt,
		    uint64_t due, int rule, int copies)
{
	struct umc_device *dev = qp->dev;
	size_t ah_off = (pkt->len + 15) & ~(size_t)15;
	struct tx_held *h = NULL;
	uint64_t off = 0;

	if (fd->tx.n < UMC_FAULT_HOLD_MAX)
		h = malloc(sizeof(*h) + ah_off + dev->link->ah_size);
	if (!h) {
		FCNT(dev, pkt->ah->gcnt, fault_hold_full);
		return false;
	}
	h->q.due = due;
	h->q.rule = rule;
	h->q.copies = copies;
	h->qpn = qp->ibqp.qp_num;
	h->pkt = *pkt;
	for (int i = 0; i < pkt->num_sge; i++) {
		memcpy(h->data + off, (const void *)(uintptr_t)pkt->sge[i].addr, pkt->sge[i].length);
		off += pkt->sge[i].length;
	}
	h->sge = (struct ibv_sge){.addr = (uintptr_t)h->data, .length = pkt->len};
	h->pkt.sge = &h->sge;
	h->pkt.num_sge = 1;
	memcpy(h->data + ah_off, pkt->ah, dev->link->ah_size);
	h->pkt.ah = (struct umc_ah *)(void *)(h->data + ah_off);
	held_link(&fd->tx, &h->q);
	return true;
}

void umc_fault_tx(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n)
{
	struct umc_device *dev = qp->dev;
	struct umc_fault_dev *fd = dev->fault;
	struct umc_tx_pkt out[4 * UMC_TX_BATCH]; /* each: itself and a copy, one released twice */
	struct tx_held *now_held[UMC_FAULT_MAX_RULES];
	const struct umc_fault_rules *rules;
	uint64_t now = umc_fault_now_us();
	int k = 0, nnow = 0;

	umc_mutex_lock(&fd->lock, UMC_LOCK_FAULT);
	rules = fd->rules;
	for (int i = 0; i < n; i++) {
		struct umc_tx_pkt *pkt = &pkts[i];
		struct umc_fault_verdict v;
		int r;

		if (fd->port_down) {
			FCNT(dev, pkt->ah->gcnt, fault_port_down);
			continue;
		}
		r = rules ? umc_fault_match(&rules->spec, UMC_FAULT_TX, dev->ibdev.name, tx_mgid(pkt),
					    qp->ibqp.qp_num)
			  : -1;
		if (r < 0) {
			out[k++] = *pkt;
			continue;
		}
		umc_fault_decide(&rules->spec.rule[r], &fd->stream[r], &v);
		if (v.fate == UMC_FAULT_CORRUPT) {
			count_fate(dev, pkt->ah->gcnt, v.fate);
			out[k] = *pkt;
			out[k++].corrupt = true;
			continue;
		}
		if (v.fate != UMC_FAULT_PASS) {
			count_fate(dev, pkt->ah->gcnt, v.fate);
			continue;
		}
		if (v.hold || v.delay_us) {
			if (v.hold ? tx_hold(qp, fd, pkt, now + UMC_FAULT_REORDER_MAX_US, r, 1 + v.dup)
				   : tx_hold(qp, fd, pkt, now + v.delay_us, -1, 1 + v.dup)) {
				if (v.hold)
					FCNT(dev, pkt->ah->gcnt, fault_reorder);
				else
					FCNT(dev, pkt->ah->gcnt, fault_delay);
				if (v.dup)
					FCNT(dev, pkt->ah->gcnt, fault_dup);
			}
		} else {
			out[k++] = *pkt;
			if (v.dup) {
				FCNT(dev, pkt->ah->gcnt, fault_dup);
				out[k++] = *pkt;
			}
		}
		if (v.release && fd->tx.by_rule[r]) {
			struct tx_held *h = (struct tx_held *)fd->tx.by_rule[r];

			held_unlink(&fd->tx, &h->q);
			if (h->qpn == qp->ibqp.qp_num) { /* goes right after it, in this batch */
				now_held[nnow++] = h;
				for (int c = 0; c < h->q.copies; c++)
					out[k++] = h->pkt;
			} else { /* another QP's: the control thread sends it now */
				h->q.due = now;
				h->q.rule = -1;
				held_link(&fd->tx, &h->q);
			}
		}
	}
	flags_update(dev, fd, false, true);
	umc_mutex_unlock(&fd->lock);
	if (k)
		dev->link->xmit(qp, out, k);
	for (int i = 0; i < nnow; i++)
		free(now_held[i]);
}

void umc_fault_qp_gone(struct umc_qp *qp)
{
	struct umc_device *dev = qp->dev;
	struct umc_fault_dev *fd = dev->fault;

	if (!fd)
		return;
	umc_mutex_lock(&fd->lock, UMC_LOCK_FAULT);
	for (struct held *h = fd->tx.head, *next; h; h = next) {
		next = h->next;
		if (((struct tx_held *)h)->qpn == qp->ibqp.qp_num) {
			held_unlink(&fd->tx, h);
			free(h);
		}
	}
	flags_update(dev, fd, false, true);
	umc_mutex_unlock(&fd->lock);
}

/* Send what @dev holds and is due at @now; returns when the next one is.  Context: none held. */
static uint64_t tx_due(struct umc_device *dev, struct umc_fault_dev *fd, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
	for (;;) {
		struct tx_held *h;
		struct umc_qp *qp;

		umc_mutex_lock(&fd->lock, UMC_LOCK_FAULT);
		h = (struct tx_held *)held_due(&fd->tx, now);
		if (!h) {
			next = fd->tx.head ? fd->tx.head->due : UINT64_MAX;
			flags_update(dev, fd, false, true);
			umc_mutex_unlock(&fd->lock);
			break;
		}
		held_unlink(&fd->tx, &h->q);
		umc_mutex_unlock(&fd->lock);
		/* dev->lock keeps the QP on the list (ibv_destroy_qp takes it first). */
		qp = __umc_qp_by_num(dev, h->qpn);
		if (qp) {
			umc_mutex_lock(&qp->sq_lock, UMC_LOCK_QP_SQ);
			for (int c = 0; c < h->q.copies; c++)
				dev->link->xmit(qp, &h->pkt, 1);
			umc_mutex_unlock(&qp->sq_lock);
		}
		free(h);
	}
	umc_mutex_unlock(&dev->lock);
	return next;
}

/* ------------------------------------------------------------------------- */
/* SA.                                                                       */

enum umc_sa_fault umc_fault_sa(void *devp, const uint8_t *mad, bool first, uint16_t *status)
{
	struct umc_device *dev = devp;
	struct umc_fault_dev *fd = __atomic_load_n(&dev->fault, __ATOMIC_ACQUIRE);
	const struct umc_sa_mad_wire *w = (const struct umc_sa_mad_wire *)(const void *)mad;
	enum umc_sa_fault fate = UMC_SA_FAULT_NONE;
	const struct umc_fault_rule *rule;
	struct umc_fault_verdict v;
	int r;

	if (!fd || w->method != UMC_MAD_METHOD_SET ||
	    get_be16(w->attr_id) != UMC_SA_ATTR_MCMEMBER_RECORD)
		return fate;
	umc_mutex_lock(&fd->lock, UMC_LOCK_FAULT);
	r = fd->rules && (fd->rules->dirs & 1u << UMC_FAULT_SA)
		    ? umc_fault_match(&fd->rules->spec, UMC_FAULT_SA, dev->ibdev.name,
				      mad + UMC_SA_HDR_LEN, 0)
		    : -1;
	if (r < 0)
		goto out;
	rule = &fd->rules->spec.rule[r];
	if (!first && (rule->words & (UMC_FW_REJECT | UMC_FW_TIMEOUT))) {
		/* Decided at the first send: a timeout lets no resend out either. */
		fate = rule->words & UMC_FW_TIMEOUT ? UMC_SA_FAULT_TIMEOUT : UMC_SA_FAULT_NONE;
		goto out;
	}
	umc_fault_decide(rule, &fd->stream[r], &v);
	switch (v.fate) {
	case UMC_FAULT_PASS:
		break;
	case UMC_FAULT_REJECT:
		CNT(dev, fault_sa_reject);
		*status = v.status;
		fate = UMC_SA_FAULT_REJECT;
		break;
	case UMC_FAULT_TIMEOUT:
		CNT(dev, fault_sa_timeout);
		fate = UMC_SA_FAULT_TIMEOUT;
		break;
	default: /* drop=, drop_nth= */
		CNT(dev, fault_sa_drop);
		fate = UMC_SA_FAULT_DROP;
		break;
	}
out:
	umc_mutex_unlock(&fd->lock);
	return fate;
}

/* ------------------------------------------------------------------------- */
/* Port down, and the control thread's tick.                                 */

void umc_fault_port_down(struct umc_device *dev, bool down)
{
	struct umc_fault_dev *fd;

	umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	fd = fault_dev(dev);
	if (fd) {
		umc_mutex_lock(&fd->lock, UMC_LOCK_FAULT);
		fd->port_down = down;
		flags_update(dev, fd, true, true);
		umc_mutex_unlock(&fd->lock);
	}
	umc_mutex_unlock(&dev->rx_lock);
}

uint64_t umc_fault_tick(uint64_t now)
{
	struct umc_device **devs;
	uint64_t next = UINT64_MAX;
	int n = umc_devices(&devs);

	for (int d = 0; d < n; d++) {
		struct umc_device *dev = devs[d];
		struct umc_fault_dev *fd = __atomic_load_n(&dev->fault, __ATOMIC_ACQUIRE);
		uint64_t t;

		if (!fd)
			continue;
		/* Received: the engine's pass delivers what is due. */
		umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
		if (held_due(&fd->rx, now))
			__umc_progress(dev);
		t = fd->rx.head ? fd->rx.head->due : UINT64_MAX;
		umc_mutex_unlock(&dev->rx_lock);
		if (t < next)
			next = t;
		t = tx_due(dev, fd, now);
		if (t < next)
			next = t;
	}
	return next;
}
