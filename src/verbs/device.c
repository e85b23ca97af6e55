/* SPDX-License-Identifier: MIT */
/*
 * device.c - the device list, contexts and the queries.
 *
 * Each process is its own HCA.  Every link layer's probe registers one
 * device per port it finds (RoCE: one per network interface that is up
 * and has an address, link/roce/port.c), each with one port (port 1).  The
 * list is built on first use and lives as long as the process.  It only
 * grows: when an address is not found (an interface or address that
 * appeared later), every link probes again and new devices and GIDs are
 * appended, so existing GID indices never move, as in a GID cache.
 * A child of fork(2) starts with an empty list and builds its own
 * (umc_devices_forked; fork.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ctl/server.h"
#include "fault/stage.h"
#include "stat/objects.h"
#include "verbs/verbs_int.h"

/* Fixed storage: readers walk it without a lock while it grows (append only). */
static struct umc_device *umc_devs[UMC_MAX_DEVICES];
static _Atomic int umc_ndevs;
static atomic_bool umc_devs_scanned; /* every link probed once */
/* Writers of the list, and the list of open contexts. */
static pthread_mutex_t umc_devs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct umc_context *umc_ctx_list;
/* In a child of fork: the parent's devices, kept so that its objects stay reachable. */
static struct umc_device *umc_devs_inherited;

int __umc_dev_list(struct umc_device ***list)
{
	*list = umc_devs;
	return atomic_load(&umc_ndevs);
}

int umc_dev_register(struct umc_device *dev, const struct umc_link_ops *ops)
{
	int n = atomic_load(&umc_ndevs);

	if (n == UMC_MAX_DEVICES)
		return -ENOSPC;
	dev->link = umc_link_complete(ops);
	dev->gen = umc_fork_gen;
	dev->cnt = umc_stat_dev_add(dev);
	umc_fault_dev_init(dev);
	dev->ibdev.node_type = IBV_NODE_CA;
	dev->ibdev.transport_type = dev->link->transport;
	dev->rx_epfd = -1;
	dev->rx_kick = -1;
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->rx_lock, NULL);
	pthread_mutex_init(&dev->watch_lock, NULL);
	umc_devs[n] = dev;
	atomic_store(&umc_ndevs, n + 1); /* published once complete */
	umc_ctl_dev_added(dev);
	return 0;
}

void umc_dev_add_gid(struct umc_device *dev, const union ibv_gid *gid)
{
	for (int i = 0; i < dev->gid_count; i++)
		if (memcmp(&dev->gids[i], gid, sizeof(*gid)) == 0)
			return;
	if (dev->gid_count == UMC_MAX_GIDS)
		return;
	dev->gids[dev->gid_count] = *gid;
	__atomic_store_n(&dev->gid_count, dev->gid_count + 1, __ATOMIC_RELEASE);
}

/*
 * UMC_STATS=1 in the environment: every device's counters on stderr at
 * exit, read where umc-stat reads them (stat/objects.h).
 */
static void umc_stats_dump(void)
{
	for (int d = 0; d < umc_ndevs; d++) {
		const struct umc_counters *c = umc_devs[d]->cnt;

		fprintf(stderr, "umcast: %s", umc_devs[d]->ibdev.name);
#define UMC_COUNTER_PRINT(name)                                                                    \
	fprintf(stderr, " " #name "=%llu", (unsigned long long)atomic_load(&c->name));
		UMC_COUNTERS(UMC_COUNTER_PRINT)
#undef UMC_COUNTER_PRINT
		fprintf(stderr, "\n");
	}
}

/*
 * Every link layer looks for new ports and addresses; caller holds
 * umc_devs_lock.  With cancellation off: a probe reads the interfaces
 * (getifaddrs(3), /sys) and on InfiniBand registers with the SA and waits
 * for its answer, all cancellation points that a cancel must not end with
 * the lock held (umc_cancel_off()).
 */
static void __umc_devices_probe(void)
{
	const struct umc_link_ops *const *links;
	int n = umc_links(&links), cancel = umc_cancel_off(), ndev;

	for (int i = 0; i < n; i++)
		links[i]->probe();
	/* A probe adds devices and GIDs: the counters file shows them as they are now. */
	ndev = atomic_load(&umc_ndevs);
	for (int d = 0; d < ndev; d++)
		umc_stat_dev_port(umc_devs[d]);
	umc_cancel_restore(cancel);
}

static void umc_devices_probe(void)
{
	umc_mutex_lock(&umc_devs_lock, UMC_LOCK_DEVS);
	__umc_devices_probe();
	umc_mutex_unlock(&umc_devs_lock);
}

/* The first probe of this process (or of this child of fork). */
static void umc_devices_init(void)
{
	static bool stats; /* atexit handlers are inherited: register once */

	umc_mutex_lock(&umc_devs_lock, UMC_LOCK_DEVS);
	if (!atomic_load(&umc_devs_scanned)) {
		umc_ctl_lib_start(); /* the counters file first: devices count there */
		__umc_devices_probe();
		atomic_store(&umc_devs_scanned, true);
		if (!stats && getenv("UMC_STATS"))
			stats = atexit(umc_stats_dump) == 0;
	}
	umc_mutex_unlock(&umc_devs_lock);
}

int umc_devices(struct umc_device ***list)
{
	if (umc_unlikely(!atomic_load_explicit(&umc_devs_scanned, memory_order_acquire)))
		umc_devices_init();
	*list = umc_devs;
	return atomic_load(&umc_ndevs);
}

/* In the child of fork (one thread, umc_devs_lock held by the forking thread). */
void umc_devices_forked(void)
{
	int n = atomic_load(&umc_ndevs);

	for (int i = 0; i < n; i++) {
		umc_devs[i]->inherited_next = umc_devs_inherited;
		umc_devs_inherited = umc_devs[i];
		umc_devs[i] = NULL;
	}
	atomic_store(&umc_ndevs, 0);
	atomic_store(&umc_devs_scanned, false);
	/* Every context open now is the parent's: its data path gives EIO. */
	for (struct umc_context *c = umc_ctx_list; c; c = c->next)
		umc_ctx_forked_ops(&c->vctx.context);
}

UMC_ATFORK_MUTEX(umc_devs_lock, UMC_LOCK_DEVS, umc_devices_forked)

/*
 * The device of this process for @dev's port: @dev itself, or in a child
 * of fork, for a device of the parent's list, the child's own device of
 * the same name (NULL if the child has none).
 */
static struct umc_device *umc_dev_current(struct umc_device *dev)
{
	struct umc_device **devs, *cur = NULL;
	int n;

	if (!umc_dev_forked(dev))
		return dev;
	n = umc_devices(&devs);
	for (int i = 0; i < n && !cur; i++)
		if (strcmp(devs[i]->ibdev.name, dev->ibdev.name) == 0)
			cur = devs[i];
	return cur;
}

static int umc_dev_find_addr(const struct sockaddr *sa, struct umc_device **devp, int *gid_index)
{
	struct umc_device **devs;
	int n = umc_devices(&devs);

	for (int d = 0; d < n; d++) {
		int gi = devs[d]->link->addr_gid(devs[d], sa);

		if (gi >= 0) {
			*devp = devs[d];
			*gid_index = gi;
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

int umc_dev_by_addr(const struct sockaddr *sa, struct umc_device **devp, int *gid_index)
{
	struct sockaddr_in v4;

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			memset(&v4, 0, sizeof(v4));
			v4.sin_family = AF_INET;
			memcpy(&v4.sin_addr, s6->sin6_addr.s6_addr + 12, 4);
			sa = (const struct sockaddr *)&v4;
		}
	}
	if (!umc_dev_find_addr(sa, devp, gid_index))
		return 0;
	/* Perhaps an address that appeared since: probe again. */
	umc_devices_probe();
	return umc_dev_find_addr(sa, devp, gid_index);
}

int umc_dev_route(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = dst->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						  : sizeof(struct sockaddr_in6);
	struct sockaddr_storage to;
	int fd, ret = 0;

	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	fd = UMC_FD_NEW(socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), false);
	if (fd < 0)
		return -errno;
	/* connect() on UDP only consults the routing table; nothing is sent. */
	memcpy(&to, dst, len);
	((struct sockaddr_in *)&to)->sin_port = htons(UMC_ROCEV2_UDP_PORT);
	if (connect(fd, (struct sockaddr *)&to, len) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		ret = -errno;
	umc_fd_close(fd);
	if (!ret)
		((struct sockaddr_in *)src)->sin_port = 0;
	return ret;
}

/* ------------------------------------------------------------------------- */
/* Device list and contexts (ibv_get_device_list(3), ibv_open_device(3)).    */

UMC_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct umc_device **devs;
	int n = umc_devices(&devs);
	struct ibv_device **list = calloc(n + 1, sizeof(*list));

	if (!list)
		return umc_null_errno(-ENOMEM);
	for (int i = 0; i < n; i++)
		list[i] = &devs[i]->ibdev;
	if (num_devices)
		*num_devices = n;
	return list;
}

UMC_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

UMC_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

/* In a child of fork, a device of the parent's list names the child's device of that port. */
UMC_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct umc_device *dev = umc_dev_current(to_udev(device));

	return htobe64((dev ? dev : to_udev(device))->guid);
}

/* The receive epoll fd exists once a context of the device is open. */
static int umc_dev_rx_init(struct umc_device *dev)
{
	int ret = 0;

	umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	if (dev->rx_epfd < 0) {
		dev->rx_epfd = UMC_FD_NEW(epoll_create1(EPOLL_CLOEXEC), false);
		if (dev->rx_epfd < 0)
			ret = -errno;
	}
	umc_mutex_unlock(&dev->rx_lock);
	return ret;
}

/*
 * ibv_open_device(3).  In a child of fork, a device of the parent's list
 * opens the child's own device of that port (ENODEV if there is none).
 */
UMC_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct umc_device *dev = umc_dev_current(to_udev(device));
	struct umc_context *ctx;
	int ret = dev ? umc_dev_rx_init(dev) : -ENODEV;

	if (ret)
		return umc_null_errno(ret);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return umc_null_errno(-ENOMEM);
	umc_context_init(ctx, dev);
	umc_mutex_lock(&umc_devs_lock, UMC_LOCK_DEVS);
	ctx->next = umc_ctx_list;
	if (ctx->next)
		ctx->next->pprev = &ctx->next;
	ctx->pprev = &umc_ctx_list;
	umc_ctx_list = ctx;
	umc_mutex_unlock(&umc_devs_lock);
	return &ctx->vctx.context;
}

/* ibv_close_device(3): -1 and errno EIO for the parent's context in a child of fork. */
UMC_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct umc_context *ctx = to_uctx(context);

	if (umc_ctx_forked(context))
		return umc_minus1_errno(-EIO);
	umc_mutex_lock(&umc_devs_lock, UMC_LOCK_DEVS);
	*ctx->pprev = ctx->next;
	if (ctx->next)
		ctx->next->pprev = ctx->pprev;
	umc_mutex_unlock(&umc_devs_lock);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

int umc_dev_cm_context(struct umc_device *dev, struct ibv_context **ctx, struct ibv_pd **pd)
{
	int ret = 0;

	umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
	if (!dev->cm_ctx) {
		umc_mutex_unlock(&dev->lock);
		struct ibv_context *c = ibv_open_device(&dev->ibdev);
		struct ibv_pd *p = c ? ibv_alloc_pd(c) : NULL;

		umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
		if (!p) {
			ret = -(errno ? errno : ENOMEM);
			if (c)
				ibv_close_device(c);
		} else if (dev->cm_ctx) { /* another thread was first */
			ibv_dealloc_pd(p);
			ibv_close_device(c);
		} else {
			dev->cm_ctx = c;
			dev->cm_pd = p;
		}
	}
	if (!ret) {
		*ctx = dev->cm_ctx;
		if (pd)
			*pd = dev->cm_pd;
	}
	umc_mutex_unlock(&dev->lock);
	return ret;
}

/* ------------------------------------------------------------------------- */
/* Port events (ib_register_event_handler, ib_dispatch_event).               */

/* Appended at the tail, so handlers run in the order they registered; never removed. */
void umc_dev_event_register(struct umc_event_handler *h)
{
	struct umc_event_handler **pp = &h->dev->events, *cur = NULL;

	h->next = NULL;
	/* A failed exchange leaves in @cur the handler that holds the slot: go past it. */
	while (!__atomic_compare_exchange_n(pp, &cur, h, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
		pp = &cur->next;
		cur = NULL;
	}
}

void umc_dev_event(struct umc_device *dev, enum umc_event_type event)
{
	for (struct umc_event_handler *h = __atomic_load_n(&dev->events, __ATOMIC_ACQUIRE); h;
	     h = __atomic_load_n(&h->next, __ATOMIC_ACQUIRE))
		h->handler(h, event);
}

/* ------------------------------------------------------------------------- */
/* Queries (ibv_query_device(3), ibv_query_port(3), ibv_query_gid(3)).       */

UMC_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct umc_device *dev = ctx_dev(context);

	if (umc_dev_forked(dev))
		return umc_pos_errno(-EIO);
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "umcast 0.1");
	attr->node_guid = htobe64(dev->guid);
	attr->sys_image_guid = htobe64(dev->guid);
	attr->max_mr_size = UINT64_MAX;
	attr->page_size_cap = 0xfffff000;
	attr->vendor_id = 0xffffff; /* no IEEE OUI: a software device */
	attr->vendor_part_id = 0;
	attr->hw_ver = 0;
	attr->max_qp = UMC_MAX_QP;
	attr->max_qp_wr = UMC_MAX_QP_WR;
	attr->device_cap_flags = IBV_DEVICE_UD_AV_PORT_ENFORCE | IBV_DEVICE_PORT_ACTIVE_EVENT |
				 IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN;
	attr->max_sge = UMC_MAX_SGE;
	attr->max_sge_rd = UMC_MAX_SGE;
	attr->max_cq = UMC_MAX_CQ;
	attr->max_cqe = UMC_MAX_CQE;
	attr->max_mr = UMC_MAX_MR;
	attr->max_pd = UMC_MAX_PD;
	attr->max_ah = UMC_MAX_AH;
	attr->max_mcast_grp = UMC_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = UMC_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = UMC_MAX_TOT_MCAST_QP_ATTACH;
	attr->max_pkeys = UMC_MAX_PKEYS;
	attr->atomic_cap = IBV_ATOMIC_NONE;
	attr->local_ca_ack_delay = 15;
	attr->phys_port_cnt = 1;
	return 0;
}

int umc_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr)
{
	struct umc_device *dev = ctx_dev(context);

	if (umc_dev_forked(dev))
		return umc_pos_errno(-EIO);
	if (port_num != UMC_PORT_NUM)
		return umc_pos_errno(-EINVAL);
	memset(attr, 0, sizeof(*attr));
	dev->link->query_port(dev, attr);
	return 0;
}

UMC_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			     union ibv_gid *gid)
{
	struct umc_device *dev = ctx_dev(context);

	if (umc_dev_forked(dev))
		return umc_minus1_errno(-EIO);
	if (port_num != UMC_PORT_NUM || index < 0 || index >= dev->gid_tbl_len)
		return umc_minus1_errno(-EINVAL);
	if (index < __atomic_load_n(&dev->gid_count, __ATOMIC_ACQUIRE))
		*gid = dev->gids[index];
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

/* The port's P_Key table; entries past the link's are 0 (invalid), as on rxe. */
UMC_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
			      __be16 *pkey)
{
	struct umc_device *dev = ctx_dev(context);

	if (umc_dev_forked(dev))
		return umc_minus1_errno(-EIO);
	if (port_num != UMC_PORT_NUM || index < 0 || index >= UMC_MAX_PKEYS)
		return umc_minus1_errno(-EINVAL);
	*pkey = index < dev->pkey_count ? htobe16(dev->pkeys[index]) : 0;
	return 0;
}

/* ibv_get_pkey_index(3): the index of @pkey (exactly, membership bit included), ENOENT if none. */
UMC_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	struct umc_device *dev = ctx_dev(context);

	if (umc_dev_forked(dev))
		return umc_minus1_errno(-EIO);
	if (port_num != UMC_PORT_NUM)
		return umc_minus1_errno(-EINVAL);
	for (int i = 0; i < dev->pkey_count; i++)
		if (dev->pkeys[i] == be16toh(pkey))
			return i;
	return umc_minus1_errno(-ENOENT);
}
