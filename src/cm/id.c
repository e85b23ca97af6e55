/* SPDX-License-Identifier: MIT */
/*
 * id.c - RDMA CM ids: create/destroy, bind, address resolution, the
 * synchronous mode, and the CM's device list.
 *
 * An id has two views of its binding, as on Linux.  The "kernel" view
 * (idp->state, idp->dev, idp->gid_index, idp->src) changes when the call is
 * made; it is what a join checks.  The public fields (id->verbs, id->pd,
 * id->port_num, id->route.addr) are written by rdma_bind_addr() at once and,
 * after rdma_resolve_addr(), when the ADDR_RESOLVED event is retrieved
 * (librdmacm/cma.c ucma_process_addr_resolved()).
 *
 * Address resolution needs no network exchange here: a specific source
 * address names its device, otherwise the routing table does (a UDP
 * connect(), as the kernel's route lookup).  The result is queued as an
 * event at once, so the timeout can never expire.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_int.h"

/* umc_cm_id_get - take a reference on @idp (every event of the id holds one). */
void umc_cm_id_get(struct umc_cm_id *idp)
{
	atomic_fetch_add(&idp->refcnt, 1);
}

/* umc_cm_id_put - drop a reference; the last one frees the id. */
void umc_cm_id_put(struct umc_cm_id *idp)
{
	if (atomic_fetch_sub(&idp->refcnt, 1) != 1)
		return;
	while (idp->attach) { /* only if the QP outlived the id */
		struct umc_cm_attach *a = idp->attach;

		idp->attach = a->next;
		free(a);
	}
	umc_cm_chan_put(idp->chan);
	pthread_mutex_destroy(&idp->lock);
	free(idp);
}

/*
 * Bind @idp to the device that owns local address @addr (kernel
 * cma_acquire_dev_by_src_ip), and let the port's join code meet the port
 * (port_add: on InfiniBand the first bind reads the IPoIB broadcast
 * group's record from the SA).  Caller holds idp->lock.
 * Returns 0, -EADDRNOTAVAIL (no device has the address), -EAFNOSUPPORT,
 * or the error of opening the device's CM context.
 */
static int __cm_bind_dev(struct umc_cm_id *idp, const struct sockaddr *addr, socklen_t len)
{
	struct umc_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int gid_index, ret;

	ret = umc_dev_by_addr(addr, &dev, &gid_index);
	if (ret)
		return ret;
	ret = umc_dev_cm_context(dev, &ctx, &pd);
	if (ret)
		return ret;
	idp->dev = dev;
	idp->jops = umc_cm_join_ops_of(dev);
	idp->jops->port_add(dev);
	idp->gid_index = gid_index;
	idp->ctx = ctx;
	idp->pd = pd;
	memset(&idp->src, 0, sizeof(idp->src));
	memcpy(&idp->src, addr, len);
	return 0;
}

/*
 * Write the binding into the public id (librdmacm ucma_get_device +
 * ucma_query_addr/ucma_query_gid).  Caller holds idp->lock.
 */
static void __cm_publish(struct umc_cm_id *idp)
{
	struct rdma_cm_id *id = &idp->id;

	memset(&id->route.addr.src_storage, 0, sizeof(id->route.addr.src_storage));
	memcpy(&id->route.addr.src_storage, &idp->src,
	       umc_cm_addrlen((struct sockaddr *)&idp->src));
	if (!idp->dev)
		return;
	id->verbs = idp->ctx;
	if (!id->qp)
		id->pd = idp->pd;
	id->port_num = UMC_PORT_NUM;
	id->route.addr.addr.ibaddr.sgid = idp->dev->gids[idp->gid_index];
	id->route.addr.addr.ibaddr.pkey = htobe16(UMC_DEFAULT_PKEY);
}

/* Ids made in this process: each gets the next number (umc-stat's "id"). */
static atomic_uint umc_cm_id_count;

/**
 * rdma_create_id - allocate a CM id.
 * @channel: where its events are reported; NULL makes the id synchronous:
 *           every call that completes with an event waits for it and
 *           leaves it in id->event (rdma_create_id(3)).
 * @id:      receives the id.
 * @context: user context, id->context.
 * @ps:      RDMA_PS_UDP or RDMA_PS_IPOIB (UD ids, the ones that can join
 *           groups), RDMA_PS_TCP or RDMA_PS_IB (RC ids).
 *
 * Return: 0, or -1 with errno: EINVAL (NULL @id, unknown port space: kernel
 * ucma_get_qp_type), ENODEV (no device: librdmacm ucma_init), ENOMEM, EIO
 * (@channel is the parent's, in a child of fork).
 */
UMC_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			      void *context, enum rdma_port_space ps)
{
	struct umc_device **devs;
	struct umc_cm_id *idp;
	enum ibv_qp_type qp_type;

	if (umc_devices(&devs) <= 0)
		return umc_minus1_errno(-ENODEV);
	switch (ps) {
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		qp_type = IBV_QPT_UD;
		break;
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		qp_type = IBV_QPT_RC;
		break;
	default:
		return umc_minus1_errno(-EINVAL);
	}
	if (!id)
		return umc_minus1_errno(-EINVAL);
	if (channel && umc_forked(to_chan(channel)->gen))
		return umc_minus1_errno(-EIO);
	idp = calloc(1, sizeof(*idp));
	if (!idp)
		return umc_minus1_errno(-ENOMEM);
	if (channel) {
		idp->chan = to_chan(channel);
		umc_cm_chan_get(idp->chan);
	} else {
		idp->chan = umc_cm_chan_create();
		if (!idp->chan) {
			int err = errno;

			free(idp);
			return umc_minus1_errno(-err);
		}
		idp->sync = true;
	}
	pthread_mutex_init(&idp->lock, NULL);
	atomic_init(&idp->refcnt, 1);
	idp->gen = umc_fork_gen;
	idp->num = atomic_fetch_add_explicit(&umc_cm_id_count, 1, memory_order_relaxed) + 1;
	idp->state = UMC_CM_IDLE;
	idp->id.channel = &idp->chan->ch;
	idp->id.context = context;
	idp->id.ps = ps;
	idp->id.qp_type = qp_type;
	*id = &idp->id;
	return 0;
}

/**
 * rdma_destroy_id - leave every group of @id and release it.
 *
 * Every join still on the id is left as by rdma_leave_multicast() (the QP
 * is detached, full-member memberships are dropped, as the kernel's
 * cma_leave_mc_groups() does),
 * and the id's queued, undelivered events are discarded.  For a
 * synchronous id, the event in id->event is acked unless the application
 * acked it already.  Unlike librdmacm this never waits for acks
 * (docs/design.md, "Departures from Linux"):
 * events the application still holds keep the id's memory alive until they
 * are acked.  A QP made by rdma_create_qp() should be destroyed first.
 *
 * Return: 0, or -1 with errno EINVAL for a NULL id, EIO for the parent's id
 * in a child of fork (nothing is released).  rdma_destroy_id(3).
 */
UMC_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct umc_cm_event *discarded = NULL, *sync_event;
	struct umc_cm_id *idp;
	struct umc_cm_mc *mc;

	idp = umc_cm_id_lock(id, true);
	if (!idp)
		return -1;
	idp->state = UMC_CM_DESTROYING;
	while ((mc = idp->mc_list)) {
		idp->mc_list = mc->next;
		__umc_cm_mc_leave(idp, mc, &discarded);
	}
	umc_cm_chan_discard(idp->chan, idp, NULL, &discarded);
	sync_event = idp->sync_event;
	idp->sync_event = NULL;
	if (sync_event && id->event == &sync_event->ev)
		id->event = NULL;
	umc_cm_id_unlock(idp);

	umc_cm_event_free_list(discarded);
	if (sync_event)
		umc_cm_event_free(sync_event);
	umc_cm_id_put(idp);
	return 0;
}

/**
 * umc_cm_complete - librdmacm's ucma_complete(): for a synchronous id, ack
 * the previous event still held in id->event (unless the application acked
 * it), wait for the next event, store it in id->event and turn a non-zero
 * status into an error (librdmacm/cma.c ucma_complete()).
 *
 * Return: 0 (also at once for an asynchronous id), or -1 with errno:
 * ECONNREFUSED for REJECTED, -status for a negative status (so an attach
 * failure, status -1, gives EPERM exactly as librdmacm), status otherwise.
 */
int umc_cm_complete(struct umc_cm_id *idp)
{
	struct umc_cm_event *prev, *evt;
	int ret, err, status;

	if (!idp->sync)
		return 0;
	__umc_cm_id_lock(idp);
	prev = idp->sync_event;
	idp->sync_event = NULL;
	if (prev && idp->id.event == &prev->ev)
		idp->id.event = NULL;
	umc_cm_id_unlock(idp);
	if (prev)
		umc_cm_event_free(prev);

	ret = umc_cm_get_event(idp->chan, &evt, &err);
	if (ret)
		return umc_minus1_errno(ret);
	__umc_cm_id_lock(idp);
	idp->sync_event = evt;
	idp->id.event = &evt->ev;
	umc_cm_id_unlock(idp);

	status = evt->ev.status;
	if (!status)
		return 0;
	if (evt->ev.event == RDMA_CM_EVENT_REJECTED)
		return umc_minus1_errno(-ECONNREFUSED);
	return umc_minus1_errno(status < 0 ? status : -status);
}

/**
 * rdma_bind_addr - bind @id to local address @addr.
 *
 * A specific address binds the id to the device that owns it at once:
 * id->verbs, id->pd (the device's default PD), id->port_num (1) and
 * route.addr (src_addr, ibaddr.sgid, ibaddr.pkey 0xffff) are set
 * (librdmacm/cma.c rdma_bind_addr(), ucma_query_addr()).  A wildcard
 * address binds no device.  The
 * address is kept as given; no port number is allocated.
 *
 * Return: 0, or -1 with errno: EINVAL (NULL @id or @addr, unknown family,
 * id already bound or resolved: kernel rdma_bind_addr), EADDRNOTAVAIL (no
 * device owns the address: kernel rdma_translate_ip), EAFNOSUPPORT (AF_IB),
 * ENOMEM, EIO (the parent's id in a child of fork).  rdma_bind_addr(3).
 */
UMC_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	socklen_t len = umc_cm_addrlen(addr);
	struct umc_cm_id *idp;
	int ret = 0;

	idp = umc_cm_id_lock(id, len != 0);
	if (!idp)
		return -1;
	if (idp->state != UMC_CM_IDLE) {
		ret = -EINVAL;
	} else if (!umc_cm_any_addr(addr)) {
		ret = __cm_bind_dev(idp, addr, len);
	} else {
		memset(&idp->src, 0, sizeof(idp->src));
		memcpy(&idp->src, addr, len);
	}
	if (!ret) {
		idp->state = UMC_CM_ADDR_BOUND;
		__cm_publish(idp);
	}
	umc_cm_id_unlock(idp);
	return umc_minus1_errno(ret);
}

/*
 * The kernel half of rdma_resolve_addr (cma.c resolve_prepare_src +
 * addr resolution).  Caller holds idp->lock.  Returns a synchronous error,
 * or 0 with the event's type and status in *@type / *@status.
 */
static int __cm_resolve(struct umc_cm_id *idp, const struct sockaddr *src,
			const struct sockaddr *dst, enum rdma_cm_event_type *type, int *status)
{
	socklen_t slen = umc_cm_addrlen(src);
	struct sockaddr_storage routed;
	int ret;

	if (idp->state == UMC_CM_IDLE) {
		/* cma_bind_addr: the given source, or the wildcard of dst's family. */
		if (slen && !umc_cm_any_addr(src)) {
			ret = __cm_bind_dev(idp, src, slen);
			if (ret)
				return ret;
		} else {
			memset(&idp->src, 0, sizeof(idp->src));
			if (slen)
				memcpy(&idp->src, src, slen);
			else
				idp->src.ss_family = dst->sa_family;
		}
		idp->state = UMC_CM_ADDR_BOUND;
	} else if (idp->state == UMC_CM_ADDR_BOUND) {
		/* Already bound (pyverbs binds, then resolves with the same src). */
		if (slen && !umc_cm_any_addr(src)) {
			struct umc_device *dev;
			int gid_index;

			ret = umc_dev_by_addr(src, &dev, &gid_index);
			if (ret)
				return ret;
			if (idp->dev && dev != idp->dev)
				return -EINVAL;
			ret = __cm_bind_dev(idp, src, slen);
			if (ret)
				return ret;
		}
	} else {
		return -EINVAL;
	}
	if (idp->src.ss_family != dst->sa_family)
		return -EINVAL;

	*type = RDMA_CM_EVENT_ADDR_RESOLVED;
	*status = 0;
	if (!idp->dev) {
		ret = umc_dev_route(dst, &routed);
		if (!ret)
			ret = __cm_bind_dev(idp, (struct sockaddr *)&routed,
					    umc_cm_addrlen((struct sockaddr *)&routed));
		if (ret) {
			*type = RDMA_CM_EVENT_ADDR_ERROR;
			*status = ret;
			return 0;
		}
	}
	idp->state = UMC_CM_ADDR_RESOLVED;
	return 0;
}

/**
 * rdma_resolve_addr - resolve @dst to a local device and source address.
 * @src:        source address, or NULL.  A specific address chooses the
 *              device; it may repeat the address @id is already bound to.
 * @dst:        the destination, typically the multicast group.
 * @timeout_ms: unused: resolution needs no network exchange here.
 *
 * @dst is copied into id->route.addr.dst_addr at once.  Without a specific
 * source (given or bound) the routing table picks it, as the kernel does.
 * The result is reported as RDMA_CM_EVENT_ADDR_RESOLVED (the event sets
 * id->verbs, id->pd, id->port_num and route.addr when it is retrieved) or
 * RDMA_CM_EVENT_ADDR_ERROR with a negative errno status (-ENETUNREACH,
 * -EADDRNOTAVAIL...).  A synchronous id waits for it.
 *
 * Return: 0, or -1 with errno: EINVAL (NULL @id, bad @dst or @src family,
 * id already resolved, source and destination families differ, @src on
 * another device than the bound one), EADDRNOTAVAIL (@src is not local),
 * ENOMEM, EIO (the parent's id in a child of fork); for a synchronous id,
 * the error of the ADDR_ERROR event.  rdma_resolve_addr(3),
 * librdmacm/cma.c rdma_resolve_addr().
 */
UMC_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	socklen_t dlen = umc_cm_addrlen(dst_addr);
	enum rdma_cm_event_type type;
	struct umc_cm_event *evt;
	struct umc_cm_id *idp;
	int ret, status;

	(void)timeout_ms;
	if (!id || !dlen || (src_addr && !umc_cm_addrlen(src_addr)))
		return umc_minus1_errno(-EINVAL);
	if (umc_cm_id_forked(id))
		return umc_minus1_errno(-EIO);
	idp = to_cmid(id);
	evt = umc_cm_event_new(idp, NULL, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (!evt)
		return umc_minus1_errno(-ENOMEM);
	__umc_cm_id_lock(idp);
	ret = __cm_resolve(idp, src_addr, dst_addr, &type, &status);
	if (!ret) {
		memset(&id->route.addr.dst_storage, 0, sizeof(id->route.addr.dst_storage));
		memcpy(&id->route.addr.dst_storage, dst_addr, dlen);
		evt->ev.event = type;
		evt->ev.status = status;
		umc_cm_event_queue(evt);
		evt = NULL;
	}
	umc_cm_id_unlock(idp);
	if (ret) {
		umc_cm_event_free(evt);
		return umc_minus1_errno(ret);
	}
	return umc_cm_complete(idp);
}

/**
 * umc_cm_process_addr - the librdmacm side of ADDR_RESOLVED / ADDR_ERROR
 * at retrieval: publish the binding into the id.
 *
 * Return: 1 when the event must be dropped (id being destroyed), else 0.
 */
int umc_cm_process_addr(struct umc_cm_event *evt)
{
	struct umc_cm_id *idp = evt->idp;
	int drop = 0;

	__umc_cm_id_lock(idp);
	if (idp->state == UMC_CM_DESTROYING) {
		drop = 1;
	} else if (evt->ev.event == RDMA_CM_EVENT_ADDR_RESOLVED) {
		__cm_publish(idp);
		umc_gid_from_sockaddr(&idp->id.route.addr.addr.ibaddr.dgid,
				      &idp->id.route.addr.dst_addr);
	}
	umc_cm_id_unlock(idp);
	return drop;
}

/**
 * rdma_get_devices - the CM's context of every device, NULL-terminated.
 * @num_devices: if not NULL, receives the number of entries.
 *
 * The contexts are the ones ids bound to the devices use; they stay open
 * for the life of the process.
 *
 * Return: the array (free with rdma_free_devices()), or NULL with errno
 * ENODEV (no device) or ENOMEM, and *@num_devices 0.  rdma_get_devices(3).
 */
UMC_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	struct umc_device **devs;
	int n = umc_devices(&devs), i = 0;

	if (num_devices)
		*num_devices = 0;
	if (n <= 0)
		return umc_null_errno(-ENODEV);
	list = calloc(n + 1, sizeof(*list));
	if (!list)
		return umc_null_errno(-ENOMEM);
	for (int d = 0; d < n; d++) {
		struct ibv_context *ctx;

		/* A device whose context cannot be opened is skipped, as librdmacm
		 * skips a device it cannot initialise. */
		if (!umc_dev_cm_context(devs[d], &ctx, NULL))
			list[i++] = ctx;
	}
	list[i] = NULL;
	if (num_devices)
		*num_devices = i;
	return list;
}

/* rdma_free_devices - free an array from rdma_get_devices().  rdma_get_devices(3). */
UMC_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
