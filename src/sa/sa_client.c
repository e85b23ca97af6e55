// SPDX-License-Identifier: MIT
/*
 * sa_client.c - the SA client's port: registration with umc-sm, the lease,
 * re-registration after a lost port, LID resolution, and the client
 * thread (sa_client.h has the contract, sa_int.h the state).  It drives
 * the transactions (sa_txn.c); both send through sa_io.c.
 *
 * The thread loop: with the lock held, handle every datagram waiting on
 * the socket, then the timers (REGISTER while unregistered, RENEW every
 * lease / 3, loss of the port when no RENEW was answered for a whole
 * lease, the transactions'); drop the lock and sleep in poll() until the
 * next timer, a datagram, or the wake eventfd.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sa/sa_int.h"
#include "sa/sa_trust.h"
#include "umc_int.h"

enum { RX_BUF = UMC_SM_MAX_MSG + 1 };

static uint64_t random64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = umc_sa_now_ms() * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid() << 20;
	return v | 1;
}

static void send_register(struct umc_sa_client *c)
{
	struct umc_sm_msg m = {
		.hdr = { .type = UMC_SM_REGISTER, .tid = c->reg_ptid },
		.reg = {
			.data_addr = ntohl(c->data.sin_addr.s_addr),
			.data_port = ntohs(c->data.sin_port),
			.port_guid = c->req_guid,
			.nonce = c->nonce,
		},
	};

	umc_sa_xmit(c, &m);
}

static void lid_cache_clear(struct umc_sa_client *c)
{
	memset(c->lid_cache, 0, sizeof(c->lid_cache));
	c->lid_cache_next = 0;
}

/* A REGISTER reply with status OK: the port is (again) ours. */
static void registered(struct umc_sa_client *c, const struct umc_sm_msg *m, uint64_t now)
{
	struct umc_sa_port_attr *a = &c->attr;
	int i;

	a->info = m->port;
	a->epoch = m->hdr.epoch;
	for (i = 0; i < 8; i++) {
		a->gid[i] = (uint8_t)(m->port.subnet_prefix >> (56 - 8 * i));
		a->gid[8 + i] = (uint8_t)(m->port.port_guid >> (56 - 8 * i));
	}
	a->active = 1;
	a->down = 0;
	/*
	 * Registered again with the SM we lost the port at (it did not restart:
	 * a lease that passed unanswered, a client reregister): its epoch is
	 * ours again, and its answers are no longer the old port's.
	 */
	if (c->old_epoch == a->epoch)
		c->old_epoch = 0;
	c->req_guid = m->port.port_guid; /* keep the GUID across re-registrations */
	c->reg_ptid = 0;
	c->last_renewed = now;
	c->next_renew = now + m->port.lease_ms / 3; /* a lease is 100 ms at least (umc_sm_msg_decode) */
	lid_cache_clear(c);
}

static int register_status_errno(uint16_t status)
{
	switch (status) {
	case UMC_SM_GUID_IN_USE:
		return -EADDRINUSE;
	case UMC_SM_NO_RESOURCES:
		return -ENOSPC;
	case UMC_SM_INVALID:
		return -EINVAL;
	case UMC_SM_BAD_VERSION:
		return -EPROTONOSUPPORT;
	}
	return -EPROTO;
}

/* Is @a an address of this host (one a socket can bind)? */
static bool addr_is_local(const struct sockaddr_in *a)
{
	struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr = a->sin_addr};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool local = fd >= 0 && !bind(fd, (const struct sockaddr *)&any, sizeof(any));

	if (fd >= 0)
		close(fd);
	return local;
}

/*
 * May we speak to whoever holds the SM's address now?  Yes when it is not
 * this host's (nothing to ask: network trust, umcast(7) SECURITY), when no
 * socket holds it (nothing answers), or when its socket is the one found
 * trusted last, or is of a trusted user (sa_trust.h).  An untrusted holder
 * is named on stderr, once per process.  Context: c->lock held, or before
 * the thread.  Returns: 0, -EACCES (untrusted), -EAGAIN (the kernel did
 * not answer: ask again).
 */
static int sm_check(struct umc_sa_client *c)
{
	static atomic_bool warned;
	struct umc_udp_sock s;
	char addr[INET_ADDRSTRLEN], comm[32];
	pid_t pid;
	int ret;

	if (c->diag_fd < 0)
		return 0;
	ret = umc_udp_receiver(c->diag_fd, &c->sm, &c->local, &s);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return -EAGAIN;
	if (s.inode == c->sm_inode)
		return 0;
	if (umc_trusted_uid(s.uid, true)) {
		c->sm_inode = s.inode;
		return 0;
	}
	c->sm_inode = 0;
	if (!atomic_exchange(&warned, true)) {
		inet_ntop(AF_INET, &c->sm.sin_addr, addr, sizeof(addr));
		pid = umc_pid_of_inode(s.inode, comm, sizeof(comm));
		if (pid)
			fprintf(stderr,
				"umcast: umc-sm's address %s:%u is held by process %d (%s) of uid %u, "
				"a user this process does not trust: umc_ib0 stays down (EACCES); "
				"UMC_TRUST_UIDS=%u trusts it\n",
				addr, ntohs(c->sm.sin_port), (int)pid, comm, s.uid, s.uid);
		else
			fprintf(stderr,
				"umcast: umc-sm's address %s:%u is held by a socket of uid %u, a user "
				"this process does not trust: umc_ib0 stays down (EACCES); "
				"UMC_TRUST_UIDS=%u trusts it\n",
				addr, ntohs(c->sm.sin_port), s.uid, s.uid);
	}
	return -EACCES;
}

/* The first registration, before the thread exists. */
static int register_sync(struct umc_sa_client *c, unsigned timeout_ms)
{
	uint64_t now = umc_sa_now_ms(), deadline = now + timeout_ms, next_send = now;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	uint8_t buf[RX_BUF];
	struct umc_sm_msg m;
	ssize_t n;
	int rc;

	c->reg_ptid = umc_sa_ptid(c);
	for (;;) {
		now = umc_sa_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (now >= next_send) {
			rc = sm_check(c);
			if (rc == -EACCES) {
				c->cnt.untrusted++;
				return rc;
			}
			if (!rc)
				send_register(c);
			next_send = now + UMC_SA_REGISTER_RESEND_MS;
		}
		poll(&pfd, 1, (int)((next_send < deadline ? next_send : deadline) - now));
		for (;;) {
			n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n < 0) {
				if (errno == ECONNREFUSED)
					return -ECONNREFUSED;
				break;
			}
			if (sm_check(c)) {
				c->cnt.untrusted++;
				continue; /* the holder changed since REGISTER went */
			}
			rc = umc_sm_msg_decode(buf, (size_t)n, &m);
			if (rc && rc != -EPROTONOSUPPORT)
				continue; /* malformed (a short body, a P_Key count out of range) */
			if (m.hdr.type != UMC_SM_REGISTER_REPLY || m.hdr.tid != c->reg_ptid)
				continue; /* the header is decoded for another version too */
			if (rc)
				return rc; /* an SM of another version answered */
			if (m.hdr.status != UMC_SM_OK)
				return register_status_errno(m.hdr.status);
			registered(c, &m, umc_sa_now_ms());
			return 0;
		}
	}
}

static void emit(struct umc_sa_client *c, enum umc_sa_event ev)
{
	if (!c->event)
		return;
	umc_mutex_unlock(&c->lock);
	c->event(c->event_ctx, ev);
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
}

/*
 * port_lost - the SM no longer holds our port (or may not): every
 * membership is gone.
 * @c:   the client, lock held (dropped while the event runs)
 * @now: ms
 *
 * The next registration uses a new nonce, so that umc-sm drops whatever
 * it still keeps of the old port (its memberships) before registering the
 * new one: after PORT_LOST the port never holds a membership it had.
 */
static void port_lost(struct umc_sa_client *c, uint64_t now)
{
	if (!c->attr.active)
		return;
	c->attr.active = 0;
	c->old_epoch = c->attr.epoch;
	c->nonce = random64();
	c->reg_ptid = 0;
	c->next_register = now;
	lid_cache_clear(c);
	umc_sa_fwd_lost(c);
	emit(c, UMC_SA_EVENT_PORT_LOST);
}

static void on_register_reply(struct umc_sa_client *c, const struct umc_sm_msg *m, uint64_t now)
{
	struct umc_sa_resolve_wait *w;

	if (c->attr.active || !c->reg_ptid || m->hdr.tid != c->reg_ptid)
		return;
	if (m->hdr.status == UMC_SM_GUID_IN_USE) {
		c->req_guid = 0; /* our GUID went to another port meanwhile: take a new one */
		c->next_register = now;
		c->reg_ptid = 0;
		return;
	}
	if (m->hdr.status != UMC_SM_OK)
		return; /* try again at next_register */
	registered(c, m, now);
	umc_sa_txn_resend_all(c, now);
	umc_sa_fwd_registered(c, now);
	for (w = c->resolves; w; w = w->next)
		w->ptid = 0; /* the waiter sends its RESOLVE again */
	pthread_cond_broadcast(&c->cond);
	emit(c, UMC_SA_EVENT_PORT_ACTIVE);
}

static void on_resolve_reply(struct umc_sa_client *c, const struct umc_sm_msg *m)
{
	struct umc_sa_resolve_wait *w;

	for (w = c->resolves; w; w = w->next) {
		if (w->done || !w->ptid || w->ptid != m->hdr.tid)
			continue;
		w->done = true;
		if (m->hdr.status == UMC_SM_OK) {
			w->err = 0;
			memset(&w->ep, 0, sizeof(w->ep));
			w->ep.sin_family = AF_INET;
			w->ep.sin_addr.s_addr = htonl(m->resolved.data_addr);
			w->ep.sin_port = htons(m->resolved.data_port);
		} else {
			w->err = -ENOENT;
		}
		pthread_cond_broadcast(&c->cond);
	}
}

/* One datagram from the SM; lock held. */
static void on_datagram(struct umc_sa_client *c, const uint8_t *buf, size_t len, uint64_t now)
{
	struct umc_sm_msg m;

	if (umc_sm_msg_decode(buf, len, &m))
		return;
	if (m.hdr.type == UMC_SM_REGISTER_REPLY)
		return on_register_reply(c, &m, now);
	if (!c->attr.active || m.hdr.epoch == c->old_epoch)
		return; /* a late answer to the port we had before */
	/* About our port (a late one about the port before has its LID). */
	if (m.hdr.status == UMC_SM_UNKNOWN_PORT && m.hdr.lid == c->attr.info.lid)
		return port_lost(c, now);
	if (m.hdr.epoch != c->attr.epoch || m.hdr.lid != c->attr.info.lid)
		return;
	switch (m.hdr.type) {
	case UMC_SM_RENEW_REPLY:
		if (m.hdr.status == UMC_SM_OK)
			c->last_renewed = now;
		break;
	case UMC_SM_SA_REPLY:
		umc_sa_txn_on_reply(c, m.mad, now);
		break;
	case UMC_SM_RESOLVE_REPLY:
		on_resolve_reply(c, &m);
		break;
	case UMC_SM_FORWARD:
		umc_sa_fwd_on_forward(c, &m);
		break;
	case UMC_SM_UNSUBSCRIBE_REPLY:
	case UMC_SM_SQUATTED_REPLY:
		umc_sa_fwd_on_reply(c, &m);
		break;
	}
}

/*
 * umc-ctl's port events, on the thread: a client reregister loses the port
 * (and registers it again at once); a port going down says goodbye to the
 * SM first, and registers again once down_until has passed.
 */
static void port_requests(struct umc_sa_client *c, uint64_t now)
{
	struct umc_sm_msg bye = { .hdr = { .type = UMC_SM_UNREGISTER } };
	bool done = c->rereg_req;

	if (c->rereg_req) {
		c->rereg_req = false;
		port_lost(c, now);
	}
	if (c->down_req) {
		c->down_req = false;
		if (c->attr.active)
			umc_sa_xmit(c, &bye); /* its reply is for a port we no longer have */
		c->attr.down = 1;
		port_lost(c, now);
		c->next_register = c->down_until;
		done = true;
	}
	if (done) {
		c->port_reqs++;
		pthread_cond_broadcast(&c->cond);
	}
}

/*
 * Ask the thread for a port event (@down: port-down for @ms, else
 * reregister) and wait until it has raised it.
 */
static int port_request(struct umc_sa_client *c, bool down, unsigned ms)
{
	uint64_t end = umc_sa_now_ms() + UMC_SA_PORT_REQ_WAIT_MS;
	unsigned gen;
	int cancel, ret = 0;

	if (c->thread_started && pthread_equal(pthread_self(), c->thread))
		return -EDEADLK;
	cancel = umc_cancel_off(); /* a cancelled wait would return with c->lock held */
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	gen = c->port_reqs;
	if (down) {
		c->down_req = true;
		c->down_until = umc_sa_now_ms() + ms;
	} else {
		c->rereg_req = true;
	}
	umc_sa_wake(c);
	while (c->port_reqs == gen && !ret) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L; /* the end is on the monotonic clock: look again */
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		if (c->port_reqs == gen && umc_sa_now_ms() >= end)
			ret = -ETIMEDOUT;
	}
	umc_mutex_unlock(&c->lock);
	umc_cancel_restore(cancel);
	return ret;
}

int umc_sa_reregister(struct umc_sa_client *c)
{
	return port_request(c, false, 0);
}

int umc_sa_port_down(struct umc_sa_client *c, unsigned ms)
{
	return port_request(c, true, ms);
}

/* Registration and lease timers; returns the next time they need the thread. */
static uint64_t port_timers(struct umc_sa_client *c, uint64_t now)
{
	uint32_t lease = c->attr.info.lease_ms; /* a registered port's: read only while active */
	struct umc_sm_msg renew = { .hdr = { .type = UMC_SM_RENEW } };

	port_requests(c, now);
	if (c->attr.active && now > c->last_renewed + lease)
		port_lost(c, now); /* nothing answered for a whole lease */
	if (!c->attr.active) {
		if (now < c->down_until)
			return c->down_until;
		if (now >= c->next_register) {
			if (!c->reg_ptid)
				c->reg_ptid = umc_sa_ptid(c);
			if (!sm_check(c))
				send_register(c);
			else
				c->cnt.untrusted++;
			c->next_register = now + UMC_SA_REGISTER_RESEND_MS;
		}
		return c->next_register;
	}
	if (now >= c->next_renew) {
		umc_sa_xmit(c, &renew);
		c->next_renew = now + lease / 3;
	}
	return c->next_renew < c->last_renewed + lease + 1 ? c->next_renew : c->last_renewed + lease + 1;
}

/*
 * One datagram from the SM into @buf (RX_BUF bytes), without waiting;
 * the socket's drop count, when the kernel attaches it, goes to
 * c->cnt.rx_overflow.  Returns its length, or -1 with errno set.
 */
static ssize_t rx_datagram(struct umc_sa_client *c, uint8_t *buf)
{
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(uint32_t))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = RX_BUF };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
			     .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	uint32_t drops;
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT);

	for (cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL) {
			memcpy(&drops, CMSG_DATA(cm), sizeof(drops));
			c->cnt.rx_overflow = drops;
		}
	}
	return n;
}

static void *client_thread(void *arg)
{
	struct umc_sa_client *c = arg;
	struct pollfd pfd[2] = { { .fd = c->fd, .events = POLLIN },
				 { .fd = c->wake_fd, .events = POLLIN } };
	uint8_t buf[RX_BUF];
	uint64_t now, next, t, drain;
	ssize_t n;

	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	while (!c->stopping) {
		now = umc_sa_now_ms();
		while (!c->stopping && (n = rx_datagram(c, buf)) >= 0) {
			int trust = sm_check(c);

			if (trust == -EACCES) {
				/* Not from the SM we registered with: it is gone. */
				c->cnt.untrusted++;
				port_lost(c, now);
			}
			if (!trust)
				on_datagram(c, buf, (size_t)n, now);
		}
		if (c->stopping)
			break;
		next = port_timers(c, now);
		t = umc_sa_txn_timers(c, now);
		if (t < next)
			next = t;
		t = umc_sa_fwd_timers(c, now);
		if (t < next)
			next = t;
		if (c->stopping)
			break;
		umc_mutex_unlock(&c->lock);
		now = umc_sa_now_ms();
		poll(pfd, 2, next <= now ? 0 : next - now > 60000 ? 60000 : (int)(next - now));
		if ((pfd[1].revents & POLLIN) && read(c->wake_fd, &drain, sizeof(drain)) < 0) {
			/* nothing to drain */
		}
		umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	}
	umc_mutex_unlock(&c->lock);
	return NULL;
}

static void client_free(struct umc_sa_client *c)
{
	umc_sa_txn_free_all(c);
	umc_sa_fwd_free_all(c);
	umc_fd_close(c->fd);
	umc_fd_close(c->wake_fd);
	if (c->diag_fd >= 0)
		umc_fd_close(c->diag_fd);
	free(c);
}

/* UNREGISTER, waiting a little for the reply (the thread is gone). */
static void unregister(struct umc_sa_client *c)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_UNREGISTER } };
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	uint64_t end = umc_sa_now_ms() + UMC_SA_CLOSE_WAIT_MS, now;
	uint8_t buf[RX_BUF];
	struct umc_sm_msg r;
	ssize_t n;

	if (!c->attr.active)
		return;
	umc_sa_xmit(c, &m);
	while ((now = umc_sa_now_ms()) < end) {
		if (poll(&pfd, 1, (int)(end - now)) <= 0)
			return;
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN)
			return;
		if (n > 0 && !umc_sm_msg_decode(buf, (size_t)n, &r) &&
		    r.hdr.type == UMC_SM_UNREGISTER_REPLY && r.hdr.tid == m.hdr.tid)
			return;
	}
}

int umc_sa_open(const struct umc_sa_open_args *args, struct umc_sa_client **out)
{
	struct umc_sa_client *c;
	socklen_t len;
	int rc;

	if (!args || !out || args->sm.sin_family != AF_INET)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->diag_fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->sm = args->sm;
	c->data = args->data;
	c->req_guid = args->port_guid;
	c->event = args->event;
	c->fwd = args->fwd;
	c->event_ctx = args->event_ctx;
	c->fault = args->fault;
	c->fault_ctx = args->fault_ctx;
	c->nonce = random64();
	c->tid_hi = (uint32_t)random64();
	c->next_ptid = (uint32_t)(random64() >> 32);
	umc_sa_txn_init(c);
	/* The library's own: a child of fork closes them (verbs/fork.c). */
	c->wake_fd = UMC_FD_NEW(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), false);
	c->fd = UMC_FD_NEW(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), false);
	if (c->fd < 0 || c->wake_fd < 0 || connect(c->fd, (const void *)&c->sm, sizeof(c->sm))) {
		rc = -errno;
		goto fail;
	}
	/* The kernel's drop count comes with each datagram (rx_overflow). */
	setsockopt(c->fd, SOL_SOCKET, SO_RXQ_OVFL, &(int){ 1 }, sizeof(int));
	/* A local SM's holder is asked for (sm_check); a kernel without sock_diag cannot tell. */
	len = sizeof(c->local);
	getsockname(c->fd, (struct sockaddr *)&c->local, &len);
	if (addr_is_local(&c->sm))
		c->diag_fd = UMC_FD_NEW(umc_sock_diag_open(), false);
	rc = register_sync(c, args->timeout_ms ? args->timeout_ms : UMC_SA_REGISTER_TIMEOUT_MS);
	if (rc)
		goto fail;
	rc = umc_thread_start(&c->thread, false, client_thread, c, "umc-sa");
	if (rc) {
		unregister(c);
		goto fail;
	}
	c->thread_started = true;
	*out = c;
	return 0;
fail:
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	client_free(c);
	return rc;
}

static void stop_thread(struct umc_sa_client *c)
{
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	c->stopping = true;
	umc_mutex_unlock(&c->lock);
	umc_sa_wake(c);
	pthread_join(c->thread, NULL);
}

void umc_sa_close(struct umc_sa_client *c)
{
	if (!c)
		return;
	if (c->thread_started)
		stop_thread(c);
	unregister(c);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	client_free(c);
}

void umc_sa_counters(struct umc_sa_client *c, struct umc_sa_counters *out)
{
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	*out = c->cnt;
	umc_mutex_unlock(&c->lock);
}

int umc_sa_query_port(struct umc_sa_client *c, struct umc_sa_port_attr *attr)
{
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	*attr = c->attr;
	umc_mutex_unlock(&c->lock);
	return 0;
}

static bool lid_cache_get(struct umc_sa_client *c, uint16_t lid, struct sockaddr_in *ep)
{
	unsigned i;

	for (i = 0; i < UMC_SA_LID_CACHE; i++)
		if (c->lid_cache[i].lid == lid) {
			*ep = c->lid_cache[i].ep;
			return true;
		}
	return false;
}

static void lid_cache_put(struct umc_sa_client *c, uint16_t lid, const struct sockaddr_in *ep)
{
	struct umc_sa_lid_entry *e = &c->lid_cache[c->lid_cache_next++ % UMC_SA_LID_CACHE];

	e->lid = lid;
	e->ep = *ep;
}

static void resolve_unlink(struct umc_sa_client *c, struct umc_sa_resolve_wait *w)
{
	struct umc_sa_resolve_wait **pp = &c->resolves;

	while (*pp != w)
		pp = &(*pp)->next;
	*pp = w->next;
}

int umc_sa_resolve_lid(struct umc_sa_client *c, uint16_t lid, struct sockaddr_in *data)
{
	struct umc_sa_resolve_wait w = { .lid = lid, .err = -ETIMEDOUT };
	uint64_t end = umc_sa_now_ms() + UMC_SA_RESOLVE_TIMEOUT_MS, resend = 0, now;
	struct umc_sm_msg m;
	struct timespec ts;
	int cancel;

	if (!lid || lid > UMC_SM_MAX_UCAST_LID)
		return -EINVAL;
	if (c->thread_started && pthread_equal(pthread_self(), c->thread))
		return -EDEADLK;
	/*
	 * @w, on this stack, is on c->resolves until the wait ends, which a
	 * cancel must not end first with c->lock held (pthread_cond_timedwait
	 * is a cancellation point).  The wait is bounded by the timeout.
	 */
	cancel = umc_cancel_off();
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	if (c->attr.active && lid_cache_get(c, lid, data)) {
		umc_mutex_unlock(&c->lock);
		umc_cancel_restore(cancel);
		return 0;
	}
	w.next = c->resolves;
	c->resolves = &w;
	while (!w.done && (now = umc_sa_now_ms()) < end) {
		if (c->attr.active && (!w.ptid || now >= resend)) {
			memset(&m, 0, sizeof(m));
			m.hdr.type = UMC_SM_RESOLVE;
			m.resolve_lid = lid;
			umc_sa_xmit(c, &m);
			w.ptid = m.hdr.tid;
			resend = now + UMC_SA_REGISTER_RESEND_MS;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L; /* re-check the timers at least every 50 ms */
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	}
	resolve_unlink(c, &w);
	if (w.done && !w.err) {
		lid_cache_put(c, lid, &w.ep);
		*data = w.ep;
	}
	umc_mutex_unlock(&c->lock);
	umc_cancel_restore(cancel);
	return w.done ? w.err : -ETIMEDOUT;
}
