// SPDX-License-Identifier: MIT
/*
 * fwd.c - the forwarding of the MLIDs this port sends to: where a packet
 * to an MLID goes, as umc-sm's multicast forwarding tables say
 * (umc-sm(8) FORWARDING).
 *
 * On a fabric any port may send to an MLID, member or not, and the
 * switches take the packet to the member ports.  Here the sending port
 * needs to know where they are: each MLID it holds an AH to has an
 * ib_fwd, subscribed to at umc-sm while an AH holds it, which umc-sm
 * keeps current: its IP group and data port (multicast forwarding: one
 * datagram, the IP network replicates it) or the data endpoints of its
 * receiving ports (unicast forwarding: tx.c sends one copy to each).
 *
 * Versions only grow: an update older than the one in use is not taken
 * (the SA client never passes one), so a port that has left never comes
 * back into a list.  An update is applied under fwd_lock for writing,
 * which waits for every send in progress under the old one; when
 * ib_fwd_update() returns, no copy goes out by the old list any more, and
 * the SA client tells umc-sm so (FWD_ACK), which only then answers the
 * member whose join or leave made the change.  When the port is lost (a
 * new SM epoch: no membership is left), every unicast list is emptied
 * until umc-sm sends the new ones.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "link/ib/ib.h"
#include "sa/sa_client.h"

void ib_fwd_init(struct ib_port *port)
{
	pthread_rwlockattr_t a;

	pthread_mutex_init(&port->fwd_ref_lock, NULL);
	/* A busy sender's read locks must not keep an update (and a member's join) waiting. */
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&port->fwd_lock, &a);
	pthread_rwlockattr_destroy(&a);
}

/* @mlid's forwarding; fwd_lock or fwd_ref_lock held. */
static struct ib_fwd *fwd_find(struct ib_port *port, uint16_t mlid)
{
	struct ib_fwd *f;

	for (f = port->fwds; f && f->mlid != mlid; f = f->next)
		;
	return f;
}

/*
 * ib_fwd_get - the forwarding of @mlid for a new AH: made (and subscribed
 * to) for the port's first AH to it, then waited for, up to
 * UMC_SA_FWD_WAIT_MS, so that the AH's first send goes where umc-sm says.
 * Until umc-sm answers, an MLID is taken to be forwarded as the REGISTER
 * reply said: to its IP group (multicast), or to no port (unicast).
 * Context: no lock held.
 * Returns: 0; -ENOMEM (also: umc-sm refused a subscription beyond its cap,
 * with unicast forwarding); -EINVAL (umc-sm refused the MLID, with
 * unicast forwarding).
 */
int ib_fwd_get(struct ib_port *port, uint16_t mlid, struct ib_fwd **out)
{
	struct umc_device *dev = &port->dev;
	struct umc_sa_client *sa = ib_port_sa(port);
	struct sockaddr_in mcast = {0}, *old;
	struct ib_fwd *f;
	bool unicast;
	int ret;

	umc_mutex_lock(&port->fwd_ref_lock, UMC_LOCK_IB_FWD_REF);
	f = fwd_find(port, mlid);
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f) {
			umc_mutex_unlock(&port->fwd_ref_lock);
			return -ENOMEM;
		}
		f->mlid = mlid;
		umc_rwlock_wrlock(&port->fwd_lock, UMC_LOCK_IB_FWD);
		f->next = port->fwds;
		port->fwds = f;
		umc_rwlock_unlock(&port->fwd_lock);
	}
	if (!f->refs) {
		/* New, or kept since its last AH went (ib_fwd_put): as the REGISTER reply says. */
		umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
		unicast = ib_fwd_unicast(port);
		mcast.sin_family = AF_INET;
		mcast.sin_addr.s_addr = htonl(umc_sm_mlid_to_ip(&port->pi, mlid));
		mcast.sin_port = htons(port->pi.data_port);
		umc_mutex_unlock(&dev->lock);
		umc_rwlock_wrlock(&port->fwd_lock, UMC_LOCK_IB_FWD);
		old = f->dst;
		f->dst = NULL;
		f->n = 0;
		f->version = 0;
		f->unicast = unicast;
		f->mcast = mcast;
		umc_rwlock_unlock(&port->fwd_lock);
		free(old);
		ret = sa ? umc_sa_fwd_subscribe(sa, mlid) : 0;
		if (ret) {
			umc_mutex_unlock(&port->fwd_ref_lock);
			return ret;
		}
	}
	f->refs++;
	umc_mutex_unlock(&port->fwd_ref_lock);
	*out = f;
	if (!sa)
		return 0; /* subscribed once the port is registered (ib_fwd_subscribe_all) */
	/*
	 * Refused (the SM's cap of subscriptions, an MLID beyond its map):
	 * with unicast forwarding nothing would ever reach a member, so the AH
	 * fails; otherwise it sends to the MLID's IP group.  -ETIMEDOUT and
	 * -EDEADLK (made from the SA client's thread): the forwarding comes
	 * later.
	 */
	ret = umc_sa_fwd_wait(sa, mlid, UMC_SA_FWD_WAIT_MS);
	umc_rwlock_rdlock(&port->fwd_lock, UMC_LOCK_IB_FWD);
	unicast = f->unicast;
	umc_rwlock_unlock(&port->fwd_lock);
	if ((ret == -EINVAL || ret == -ENOSPC) && unicast) {
		ib_fwd_put(port, f);
		return ret == -ENOSPC ? -ENOMEM : -EINVAL;
	}
	return 0;
}

/*
 * ib_fwd_put - an AH lets go of @f; the last one unsubscribes.  @f itself
 * stays, for the port's life (one per MLID ever sent to): a datagram the
 * fault stage holds back keeps a copy of its AH, and with it @f, to send
 * later (fault/stage.c).
 */
void ib_fwd_put(struct ib_port *port, struct ib_fwd *f)
{
	struct umc_sa_client *sa = ib_port_sa(port);

	umc_mutex_lock(&port->fwd_ref_lock, UMC_LOCK_IB_FWD_REF);
	if (!--f->refs && sa)
		umc_sa_fwd_unsubscribe(sa, f->mlid);
	umc_mutex_unlock(&port->fwd_ref_lock);
}

/*
 * ib_fwd_update - a new version of an MLID's forwarding from umc-sm (the
 * SA client's fwd callback, on its thread): in use when this returns.
 */
void ib_fwd_update(void *ctx, const struct umc_sa_fwd *u)
{
	struct ib_port *port = ctx;
	struct sockaddr_in *dst = NULL, *old = NULL;
	struct ib_fwd *f;

	if (u->unicast && u->n && !(dst = calloc(u->n, sizeof(*dst))))
		return; /* not acknowledged: umc-sm sends it again */
	for (unsigned i = 0; u->unicast && i < u->n; i++) {
		dst[i].sin_family = AF_INET;
		dst[i].sin_addr.s_addr = htonl(u->e[i].addr);
		dst[i].sin_port = htons(u->e[i].port);
	}
	umc_rwlock_wrlock(&port->fwd_lock, UMC_LOCK_IB_FWD);
	f = fwd_find(port, u->mlid);
	if (f && u->version > f->version) {
		f->version = u->version;
		f->unicast = u->unicast;
		if (!u->unicast) {
			f->mcast.sin_addr.s_addr = htonl(u->e[0].addr);
			f->mcast.sin_port = htons(u->e[0].port);
		}
		old = f->dst;
		f->dst = dst;
		f->n = u->unicast ? u->n : 0;
		dst = NULL;
	}
	umc_rwlock_unlock(&port->fwd_lock);
	free(old);
	free(dst);
}

/* ib_fwd_lost - the port was lost: no unicast list holds until umc-sm sends new ones. */
void ib_fwd_lost(struct ib_port *port)
{
	umc_rwlock_wrlock(&port->fwd_lock, UMC_LOCK_IB_FWD);
	for (struct ib_fwd *f = port->fwds; f; f = f->next) {
		f->version = 0;
		f->n = 0;
		free(f->dst);
		f->dst = NULL;
	}
	umc_rwlock_unlock(&port->fwd_lock);
}

/* ib_fwd_subscribe_all - the port's first registration: subscribe to what AHs already hold. */
void ib_fwd_subscribe_all(struct ib_port *port, struct umc_sa_client *sa)
{
	umc_mutex_lock(&port->fwd_ref_lock, UMC_LOCK_IB_FWD_REF);
	for (struct ib_fwd *f = port->fwds; f; f = f->next)
		if (f->refs)
			(void)umc_sa_fwd_subscribe(sa, f->mlid); /* ENOMEM: that MLID keeps its default */
	umc_mutex_unlock(&port->fwd_ref_lock);
}
