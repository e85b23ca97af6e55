// SPDX-License-Identifier: MIT
/*
 * uc_steer.c - RoCEv2 unicast: the demultiplexer steering DestQP with
 * SO_REUSEPORT and classic BPF, so that the kernel delivers each datagram
 * straight to its owner, and a port's hold on the steering group (the
 * sockets the demultiplexer hands its input).  The design, threads and
 * locks: uc_int.h.
 *
 * The demultiplexer makes every socket of addr:4791's reuseport group
 * itself, binding the first (index 0, its own, the catch-all) only when
 * nobody holds the port, so the group is new and its order is the order of
 * creation.  It keeps each socket open for as long as it lives, so none
 * ever leaves the group and no index moves (a socket that leaves is
 * replaced by the last one).  Each registered process of its own user
 * (one of another user is given none: roce_uc_lead_accept() in uc_demux.c,
 * and its datagrams are passed on) gets one of them
 * (SCM_RIGHTS, through its own input) and reads it with its own receive
 * engine; a classic BPF program attached to the group (no privilege
 * needed) maps DestQP to the index of the owner's socket, and everything
 * else to index 0.  The program sees the UDP payload: the kernel moves the
 * data pointer past the UDP header before running it.  It is rebuilt and
 * attached before a claim is answered.  When a process goes, its socket is
 * drained and kept for the next process.  Each index has one state (a
 * client's, spare, or awaited: enum uc_sock_state), so none is ever spare
 * twice or given to two processes.  Every registered process is
 * also given every other socket of the group to hold (ROCE_UC_CTL_SOCK
 * without ROCE_UC_CTL_OWN), so that when the demultiplexer goes (even by
 * SIGKILL) no socket leaves the group: the kernel goes on steering with
 * the same program.  A survivor that holds the whole group takes it over
 * (roce_uc_steer_adopt: index 0 is its now), keeps the program while the others
 * register again with the index they hold (UMC_UC_ADOPT_MS), then drains
 * and spares the indices nobody came back for (a process that comes back
 * later still reads its old socket until it registers and is told to let
 * go: meanwhile a newcomer given that index shares its datagrams); only an
 * index still awaited is given back to a process that says it holds it.
 * A survivor that does not hold all of it waits UMC_UC_ADOPT_DELAY_MS
 * before it stands, and then makes a new group, telling each process to
 * let go of the old one (ROCE_UC_CTL_FRESH) so that the port becomes free.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/roce/uc/uc_int.h"

/*
 * A socket bound to @d's addr:4791, with SO_REUSEPORT when @group: the
 * demultiplexer's own, and every member of its steering group.
 * Returns the fd or -errno.
 */
int roce_uc_port_socket(const struct uc_dom *d, bool group)
{
	int fd = umc_link_socket(d->addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC), ret;

	if (fd < 0)
		return fd;
	ret = group ? roce_setopt(fd, SOL_SOCKET, SO_REUSEPORT, 1) : 0;
	ret = ret ?: roce_rx_sockopts(fd, d->addr.ss_family == AF_INET, false);
	if (!ret && bind(fd, (struct sockaddr *)&d->addr, d->addr_len))
		ret = -errno;
	if (ret) {
		umc_fd_close(fd);
		return ret;
	}
	return fd;
}

/* UMC_UC_STEER=0: pass every datagram on instead.  Read once (getenv is not thread-safe). */
bool roce_uc_steer_wanted(void)
{
	static int wanted = -1;

	if (__atomic_load_n(&wanted, __ATOMIC_RELAXED) < 0) {
		const char *e = getenv("UMC_UC_STEER");

		__atomic_store_n(&wanted, !e || *e != '0', __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&wanted, __ATOMIC_RELAXED);
}

/* Forget the group (its only member so far, index 0, is l->udp's). */
void roce_uc_steer_reset(struct uc_leader *l)
{
	free(l->socks);
	free(l->sock_state);
	l->socks = NULL;
	l->sock_state = NULL;
	l->sockcap = l->nsock = 0;
	l->steer = false;
}

struct uc_run {
	uint32_t lo, hi; /* consecutive QPNs of one owner */
	uint32_t idx;
};

static int uc_run_cmp(const void *a, const void *b)
{
	const struct uc_run *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * Build and attach the program from the QPN table: A = word 4 of the UDP
 * payload & 0xffffff (BTH DestQP); for each run of an owner's consecutive
 * QPNs "A >= lo && A <= hi: return its index"; else return 0.  Runs that do
 * not fit in BPF_MAXINSNS go through index 0 (forwarded).  Returns 0, or
 * -errno when the kernel refused the program (the last one stays).
 */
int roce_uc_steer_program(struct uc_leader *l)
{
	enum { MAX_RUNS = (BPF_MAXINSNS - 3) / 3 };
	struct sock_filter *f = malloc(BPF_MAXINSNS * sizeof(*f));
	struct uc_run *r = malloc((l->tcount + 1) * sizeof(*r));
	int n = 0, m = 0, k = 0, ret = -ENOMEM;

	/* A group taken over keeps its program until every owner is back. */
	if (l->adopting) {
		ret = 0;
		goto out;
	}
	if (!f || !r)
		goto out;
	for (uint32_t i = 0; i <= l->tmask; i++)
		if (l->tab[i].cl && l->tab[i].cl->sidx > 0)
			r[n++] = (struct uc_run){l->tab[i].qpn, l->tab[i].qpn,
						 (uint32_t)l->tab[i].cl->sidx};
	qsort(r, (size_t)n, sizeof(*r), uc_run_cmp);
	for (int i = 0; i < n; i++) {
		if (m && r[m - 1].idx == r[i].idx && r[m - 1].hi + 1 == r[i].lo)
			r[m - 1].hi = r[i].lo;
		else
			r[m++] = r[i];
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xffffff);
	for (int i = 0; i < m && i < MAX_RUNS; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, r[i].lo, 0, 2);
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, r[i].hi, 1, 0);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, r[i].idx);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);

	struct sock_fprog fp;

	memset(&fp, 0, sizeof(fp)); /* its padding goes to the kernel too */
	fp.len = (unsigned short)k;
	fp.filter = f;

	ret =
	    setsockopt(l->udp, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp, sizeof(fp)) ? -errno : 0;
out:
	free(f);
	free(r);
	return ret;
}

/* What a group socket of a process that went still holds: not for anybody now. */
void roce_uc_steer_drain(struct uc_leader *l, int fd)
{
	char b;

	while (recv(fd, &b, 1, MSG_DONTWAIT | MSG_TRUNC) >= 0)
		CNT(&l->dom->uc->rp->dev, rx_no_qp);
}

/* Tell @cl's input @op about socket @idx (sent along, SCM_RIGHTS) of the group; false if not. */
static bool uc_ctl_send(struct uc_leader *l, const struct uc_client *cl, uint8_t op, int idx,
			uint8_t flags)
{
	struct roce_uc_ctl c = {.family = ROCE_UC_FWD_CTL,
				.op = op,
				.addr_family = l->fwd0.family,
				.flags = flags,
				.index = idx >= 0 ? (uint32_t)idx : 0,
				.size = (uint32_t)l->nsock};

	/* A socket of the group goes to a process of our user only (roce_uc_lead_accept). */
	if (cl->data < 0 || (idx >= 0 && !cl->same_user))
		return false;
	memcpy(c.dst, l->fwd0.dst, sizeof(c.dst));
	return roce_send_fd(cl->data, &c, sizeof(c), idx >= 0 ? l->socks[idx] : -1);
}

/*
 * Every socket of the group but @cl's own, for @cl to hold: then no socket
 * leaves the group while any registered process lives, and @cl can take
 * the group over.  This process holds them all already.
 */
static void uc_ctl_send_all(struct uc_leader *l, const struct uc_client *cl)
{
	for (int i = 0; !cl->self && i < l->nsock; i++)
		if (i != cl->sidx)
			uc_ctl_send(l, cl, ROCE_UC_CTL_SOCK, i, 0);
}

/* A new socket of the group, spare, at index l->nsock; its index, or -1. */
static int uc_steer_new_socket(struct uc_leader *l)
{
	int fd;

	if (l->nsock == l->sockcap) {
		int cap = 2 * l->sockcap;
		int *grown = realloc(l->socks, (size_t)cap * sizeof(*grown));
		enum uc_sock_state *st =
		    grown ? realloc(l->sock_state, (size_t)cap * sizeof(*st)) : NULL;

		if (grown)
			l->socks = grown;
		if (!st)
			return -1;
		l->sock_state = st;
		l->sockcap = cap;
	}
	fd = roce_uc_port_socket(l->dom, true);
	if (fd < 0)
		return -1;
	l->socks[l->nsock] = fd;
	l->sock_state[l->nsock] = UC_SOCK_SPARE;
	return l->nsock++;
}

/*
 * Give @cl a socket of the group (a spare one, drained, or a new one, which
 * every other process is given to hold), through its input, with the
 * others to hold.  Without one its datagrams are passed on.
 */
void roce_uc_steer_give(struct uc_leader *l, struct uc_client *cl)
{
	int idx = 1;
	bool fresh;

	if (!l->steer || cl->sidx >= 0 || cl->data < 0 || !cl->same_user)
		return;
	while (idx < l->nsock && l->sock_state[idx] != UC_SOCK_SPARE)
		idx++;
	fresh = idx == l->nsock;
	if (!fresh) {
		roce_uc_steer_drain(l, l->socks[idx]);
	} else {
		if (uc_steer_new_socket(l) < 0)
			return;
		/*
		 * A new member of the group: every other process holds it at
		 * once, whether @cl takes it or not, or none of them could
		 * take the group over (roce_uc_dom_whole).
		 */
		for (int i = 0; i < l->ncl; i++)
			if (l->cl[i] != cl && !l->cl[i]->self)
				uc_ctl_send(l, l->cl[i], ROCE_UC_CTL_SOCK, idx, 0);
	}
	/* Not told: it stays spare, held by the others, for the next one. */
	if (!uc_ctl_send(l, cl, ROCE_UC_CTL_SOCK, idx, ROCE_UC_CTL_OWN))
		return;
	l->sock_state[idx] = UC_SOCK_OWNED;
	cl->sidx = idx;
	uc_ctl_send_all(l, cl);
}

/*
 * A process registers again (after a hand-over) and holds socket @idx of a
 * group: of the one this process took over, it keeps reading it; of an
 * older one (or with no steering here), it is told to let go of them all,
 * so that the port can be free for a new group, and gets one of that.
 * Only an index still awaited is given back so: one that is spare (its
 * owner went, perhaps after saying the same) or another's would then be
 * had by two processes, and anyone on the host may say it.
 */
void roce_uc_steer_return(struct uc_leader *l, struct uc_client *cl, uint32_t idx)
{
	if (cl->sidx < 0 && cl->same_user && idx < (uint32_t)l->nsock &&
	    l->sock_state[idx] == UC_SOCK_AWAITED) {
		l->sock_state[idx] = UC_SOCK_OWNED;
		cl->sidx = (int)idx;
		uc_ctl_send_all(l, cl); /* what it may have missed */
	} else {
		uc_ctl_send(l, cl, ROCE_UC_CTL_FRESH, -1, 0);
	}
}

/*
 * Take addr:4791 as index 0 of a new reuseport group (the port must be
 * free: a group some other socket is in has an order that is not ours),
 * with a program that sends everything there.  Returns the socket, or
 * -errno (-EADDRINUSE: not free yet).
 */
int roce_uc_steer_start(struct uc_leader *l)
{
	int fd = roce_uc_port_socket(l->dom, false);

	if (fd < 0)
		return fd;
	umc_fd_close(fd); /* free; nobody else binds it: only a demultiplexer does */
	fd = roce_uc_port_socket(l->dom, true);
	if (fd < 0)
		return fd;
	l->socks = malloc(8 * sizeof(*l->socks));
	l->sock_state = malloc(8 * sizeof(*l->sock_state));
	l->sockcap = 8;
	l->udp = fd;
	if (!l->socks || !l->sock_state || roce_uc_steer_program(l)) {
		/* Alone in its group the socket gets everything anyway: forward all. */
		roce_uc_steer_reset(l);
		return fd;
	}
	l->socks[0] = fd;
	l->sock_state[0] = UC_SOCK_OWNED;
	l->nsock = 1;
	l->steer = true;
	return fd;
}

/*
 * Let go of this port's hold on @d's group: its own socket (the engine's
 * descriptor now names an unbound socket) and the others (closed), so that
 * a new group can be made once every process has.  Context: not the
 * engine (which a FRESH message makes do the same, roce_uc_ctl_input).
 */
void roce_uc_dom_steer_drop(struct uc_dom *d)
{
	umc_mutex_lock(&d->steer_lock, UMC_LOCK_UC_STEER);
	if (d->steer_ep && d->own_idx >= 0) {
		int dummy = UMC_FD_NEW(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
				       false);

		/*
		 * Out of the set first: others hold the socket, so its
		 * datagrams would go on waking the set under the placeholder
		 * (uc_ep_retire).
		 */
		(void)epoll_ctl(d->uc->set.ep.fd, EPOLL_CTL_DEL, d->steer_ep->ep.fd, NULL);
		if (dummy >= 0) {
			dup3(dummy, d->steer_ep->ep.fd, O_CLOEXEC);
			umc_fd_close(dummy);
		}
	}
	for (uint32_t i = 0; i < d->grpcap; i++) {
		umc_fd_close(d->grp[i]);
		d->grp[i] = -1;
	}
	d->own_idx = -1;
	d->gsize = 0;
	umc_mutex_unlock(&d->steer_lock);
}

/* Does this port hold all of @d's group (its own socket and every other)?  steer_lock held. */
static bool __uc_dom_whole(const struct uc_dom *d)
{
	bool whole = d->gsize > 0 && d->own_idx >= 0 && d->steer_ep;

	for (uint32_t i = 0; whole && i < d->gsize; i++)
		whole = (int)i == d->own_idx || (i < d->grpcap && d->grp[i] >= 0);
	return whole;
}

bool roce_uc_dom_whole(struct uc_dom *d)
{
	bool whole;

	umc_mutex_lock(&d->steer_lock, UMC_LOCK_UC_STEER);
	whole = __uc_dom_whole(d);
	umc_mutex_unlock(&d->steer_lock);
	return whole;
}

/*
 * Take over the group this port holds, if it holds all of it: a
 * predecessor's, which went on steering after it died, since no socket left
 * the group.  Returns index 0's socket (ours now), or -1.  The indices
 * wait for their owners to register again until adopt_until.
 */
int roce_uc_steer_adopt(struct uc_leader *l)
{
	struct uc_dom *d = l->dom;
	int n, own = -1, *socks = NULL;
	enum uc_sock_state *state = NULL;

	umc_mutex_lock(&d->steer_lock, UMC_LOCK_UC_STEER);
	n = (int)d->gsize;
	if (__uc_dom_whole(d)) {
		socks = malloc((size_t)(n < 8 ? 8 : n) * sizeof(*socks));
		state = malloc((size_t)(n < 8 ? 8 : n) * sizeof(*state));
		own = socks && state
			  ? UMC_FD_NEW(fcntl(d->steer_ep->ep.fd, F_DUPFD_CLOEXEC, 0), false)
			  : -1;
	}
	if (own >= 0) {
		for (int i = 0; i < n; i++) {
			socks[i] = i == d->own_idx ? own : d->grp[i];
			if (i != d->own_idx)
				d->grp[i] = -1; /* the demultiplexer's now */
		}
		d->gsize = 0;
	}
	umc_mutex_unlock(&d->steer_lock);
	if (own < 0) {
		free(socks);
		free(state);
		return -1;
	}
	/* Index 0 is ours; every other waits for the process that holds it. */
	for (int i = 0; i < n; i++)
		state[i] = i ? UC_SOCK_AWAITED : UC_SOCK_OWNED;
	l->socks = socks;
	l->sock_state = state;
	l->sockcap = n < 8 ? 8 : n;
	l->nsock = n;
	l->udp = socks[0];
	l->steer = true;
	l->adopting = true;
	l->adopt_until = uc_now_ms() + UMC_UC_ADOPT_MS;
	atomic_store(&roce_uc_ag.pending, true);
	return socks[0];
}

/*
 * The owners had their time: every index nobody came back for is drained
 * and spare (one whose owner came back and went is spare already).
 */
void roce_uc_steer_adopted(struct uc_leader *l)
{
	l->adopting = false;
	for (int idx = 1; idx < l->nsock; idx++) {
		if (l->sock_state[idx] == UC_SOCK_AWAITED) {
			roce_uc_steer_drain(l, l->socks[idx]);
			l->sock_state[idx] = UC_SOCK_SPARE;
		}
	}
	roce_uc_steer_program(l);
}

/* ------------------------------------------------------------------------- */
/* The port's hold on the group: what the demultiplexer hands its input.    */

/* The domain of @uc whose address is @dst (of @family 4 or 6), or NULL. */
static struct uc_dom *uc_dom_by_addr(struct roce_uc *uc, int family, const uint8_t *dst)
{
	for (int i = 0; i < uc->ndom; i++) {
		const struct sockaddr_storage *a = &uc->dom[i]->addr;

		if (family == 4 && a->ss_family == AF_INET &&
		    !memcmp(&((const struct sockaddr_in *)a)->sin_addr, dst, 4))
			return uc->dom[i];
		if (family == 6 && a->ss_family == AF_INET6 &&
		    !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, dst, 16))
			return uc->dom[i];
	}
	return NULL;
}

/* Is @fd a datagram socket bound to @d's addr:4791? */
static bool uc_fd_is_group_socket(const struct uc_dom *d, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss), tl = sizeof(int);
	int type = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_DGRAM ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) || ss.ss_family != d->addr.ss_family)
		return false;
	if (ss.ss_family == AF_INET)
		return !memcmp(&ss, &d->addr, sizeof(struct sockaddr_in));
	return ((struct sockaddr_in6 *)&ss)->sin6_port == ((struct sockaddr_in6 *)&d->addr)->sin6_port &&
	       !memcmp(&((struct sockaddr_in6 *)&ss)->sin6_addr,
		       &((struct sockaddr_in6 *)&d->addr)->sin6_addr, 16);
}

/*
 * Retire steered endpoint @ep: its socket leaves the set, then closes.
 * Closing alone would not take it out: the demultiplexer and the other
 * processes of the group hold the same socket, and epoll drops an item
 * only when the last descriptor of its file closes (epoll(7)), so its
 * datagrams would go on naming @ep.  (After a hang-up the descriptor is
 * a placeholder that roce_uc_dom_steer_drop() took out already.)
 * Retiring happens in the engine, while it reads the input
 * (roce_uc_ctl_input), and an event of the same epoll_wait may still name
 * @ep, or an endpoint retired before it in the same batch of control
 * messages: each reads fd -1 (EBADF) until the set's next burst frees
 * them all (roce_uc_reap).
 */
static void uc_ep_retire(struct roce_uc *uc, struct roce_ep *ep)
{
	(void)epoll_ctl(uc->set.ep.fd, EPOLL_CTL_DEL, ep->ep.fd, NULL);
	umc_fd_close(ep->ep.fd);
	ep->ep.fd = -1;
	ep->retired_next = uc->retired;
	uc->retired = ep;
}

UMC_HOT
void roce_uc_reap(struct roce_port *rp)
{
	struct roce_uc *uc = rp->uc;

	while (uc && uc->retired) {
		struct roce_ep *ep = uc->retired;

		uc->retired = ep->retired_next;
		free(ep);
	}
}

/* Read @fd, our socket of @d's group at @idx, in place of the one we had.  steer_lock held. */
static void uc_dom_own(struct roce_uc *uc, struct uc_dom *d, int fd, uint32_t idx)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct roce_ep *ep = calloc(1, sizeof(*ep)), *old = d->steer_ep;

	if (!ep) {
		umc_fd_close(fd);
		return;
	}
	ep->ep.fd = fd;
	ep->kind = ROCE_EP_UC_SOCK;
	umc_gid_from_sockaddr(&ep->dst, (struct sockaddr *)&d->addr);
	ev.data.ptr = ep;
	if (epoll_ctl(uc->set.ep.fd, EPOLL_CTL_ADD, fd, &ev)) {
		umc_fd_close(fd);
		free(ep);
		return;
	}
	d->steer_ep = ep;
	d->own_idx = (int)idx;
	if (old)
		uc_ep_retire(uc, old);
}

/* Hold @fd, another socket of @d's group, at @idx.  steer_lock held. */
static void uc_dom_hold(struct uc_dom *d, int fd, uint32_t idx)
{
	if (idx >= d->grpcap) {
		uint32_t cap = d->grpcap ? d->grpcap : 8;
		int *grown;

		while (cap <= idx)
			cap *= 2;
		grown = idx < UMC_UC_GROUP_MAX ? realloc(d->grp, cap * sizeof(*grown)) : NULL;
		if (!grown) {
			umc_fd_close(fd);
			return;
		}
		for (uint32_t i = d->grpcap; i < cap; i++)
			grown[i] = -1;
		d->grp = grown;
		d->grpcap = cap;
	}
	umc_fd_close(d->grp[idx]);
	d->grp[idx] = fd;
}

void roce_uc_ctl_input(struct roce_port *rp, const struct roce_uc_ctl *c, int fd)
{
	struct roce_uc *uc = rp->uc;
	struct uc_dom *d = uc ? uc_dom_by_addr(uc, c->addr_family, c->dst) : NULL;
	/* A socket of the group it describes; index 0 is the demultiplexer's own. */
	bool in_group = c->size <= UMC_UC_GROUP_MAX && c->index < c->size &&
			(c->index > 0 || !(c->flags & ROCE_UC_CTL_OWN));

	if (!d || (c->op == ROCE_UC_CTL_SOCK &&
		   (fd < 0 || !in_group || !uc_fd_is_group_socket(d, fd)))) {
		CNT(&rp->dev, rx_malformed);
		umc_fd_close(fd);
		return;
	}
	umc_mutex_lock(&d->steer_lock, UMC_LOCK_UC_STEER);
	if (c->op == ROCE_UC_CTL_SOCK) {
		if (c->size > d->gsize)
			d->gsize = c->size;
		if (c->flags & ROCE_UC_CTL_OWN)
			uc_dom_own(uc, d, fd, c->index);
		else
			uc_dom_hold(d, fd, c->index);
	} else if (c->op == ROCE_UC_CTL_FRESH) {
		/* Close ours outright (we are the engine): the placeholder is for the agent. */
		if (d->steer_ep)
			uc_ep_retire(uc, d->steer_ep);
		d->steer_ep = NULL;
		for (uint32_t i = 0; i < d->grpcap; i++) {
			umc_fd_close(d->grp[i]);
			d->grp[i] = -1;
		}
		d->own_idx = -1;
		d->gsize = 0;
		umc_fd_close(fd);
	} else {
		CNT(&rp->dev, rx_malformed); /* no such operation */
		umc_fd_close(fd);
	}
	umc_mutex_unlock(&d->steer_lock);
}
