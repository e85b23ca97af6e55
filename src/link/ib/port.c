// SPDX-License-Identifier: MIT
/*
 * port.c - the simulated InfiniBand port: found when UMC_SM names a subnet
 * manager, registered with it, and what ibv_query_port shows of it.
 *
 * Environment (umcast(7)):
 *   UMC_SM=ADDR:PORT   umc-sm's address; without it there is no IB device
 *   UMC_IB_ADDR=IPv4   the port's IPoIB address, what rdma_bind_addr and
 *                      rdma_resolve_addr select the device by (default
 *                      127.0.0.2, an address of lo no RoCE device claims)
 *
 * The device "umc_ib0" appears whether or not the SM answers: an
 * unregistered port is in state INIT with LID 0 (as a real port before the
 * SM configured it), and joins fail with EADDRNOTAVAIL until it is ACTIVE
 * and the CM knows the IPoIB broadcast group's record.  The SA client
 * keeps trying in the background, renews the lease and registers again
 * after an SM restart.  Each change is a port event (umc_dev_event): the
 * port lost by the SM is UMC_EVENT_PORT_ERR (the CM ends every join with
 * -ENETRESET), each registration UMC_EVENT_PORT_ACTIVE with the new
 * attributes (the CM reads the broadcast record again).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/ib/ib.h"
#include "sa/sa_addr.h"
#include "fault/stage.h"
#include "sa/sa_client.h"

/* An IPv4 address (the IPoIB address) into @sin; returns 0 or -EINVAL. */
static int ib_parse_addr(const char *text, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	return inet_pton(AF_INET, text, &sin->sin_addr) == 1 ? 0 : -EINVAL;
}

/* The local address and interface that reach @sm (a UDP connect: nothing is sent). */
static int ib_data_iface(const struct sockaddr_in *sm, struct in_addr *addr, unsigned *ifindex)
{
	struct sockaddr_in local;
	socklen_t len = sizeof(local);
	struct ifaddrs *ifa_list;
	int fd = UMC_FD_NEW(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), false), ret = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sm, sizeof(*sm)) ||
	    getsockname(fd, (struct sockaddr *)&local, &len))
		ret = -errno;
	umc_fd_close(fd);
	if (ret)
		return ret;
	*addr = local.sin_addr;
	*ifindex = 0;
	if (getifaddrs(&ifa_list))
		return -errno;
	for (struct ifaddrs *ifa = ifa_list; ifa; ifa = ifa->ifa_next)
		if (ifa->ifa_addr && ifa->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr.s_addr == addr->s_addr)
			*ifindex = if_nametoindex(ifa->ifa_name);
	freeifaddrs(ifa_list);
	/* 127.0.0.0/8 addresses other than lo's own still go out of lo. */
	if (!*ifindex && (ntohl(addr->s_addr) >> 24) == 127)
		*ifindex = if_nametoindex("lo");
	return *ifindex ? 0 : -ENODEV;
}

/* ------------------------------------------------------------------------- */
/* Registration.                                                             */

/*
 * Take the SM's attributes for the port (LID, GUID, GID 0, P_Keys, MTU,
 * MLID map).  Context: neither dev->rx_lock nor dev->lock held.
 */
static void ib_port_apply(struct ib_port *port, const struct umc_sa_port_attr *a)
{
	struct umc_device *dev = &port->dev;
	union ibv_gid gid;

	memcpy(gid.raw, a->gid, 16);
	umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
	port->pi = a->info;
	atomic_store_explicit(&port->lid, a->info.lid, memory_order_relaxed);
	dev->active_mtu = a->info.active_mtu;
	dev->guid = a->info.port_guid;
	/* The SM's table (1..UMC_SM_PKEY_TABLE_MAX, sm_proto.c); the other slots are empty: 0. */
	dev->pkey_count = a->info.pkey_count;
	for (int i = 0; i < UMC_MAX_PKEYS; i++)
		dev->pkeys[i] = i < a->info.pkey_count ? a->info.pkeys[i] : 0;
	if (dev->gid_count)
		dev->gids[0] = gid;
	else
		umc_dev_add_gid(dev, &gid);
	atomic_store(&port->state, a->active ? IBV_PORT_ACTIVE : IBV_PORT_INIT);
	umc_mutex_unlock(&dev->lock);
	umc_mutex_unlock(&dev->rx_lock);
}

/*
 * The SA client's events, on its thread.  PORT_LOST: the SM no longer has
 * the port (umc-sm restarted, or the lease passed), so every membership is
 * gone: the port is down, UMC_EVENT_PORT_ERR (the CM ends every join with
 * -ENETRESET).  PORT_ACTIVE: registered again; the new attributes, then
 * UMC_EVENT_PORT_ACTIVE (the CM reads the broadcast record again).
 */
static void ib_sa_event(void *ctx, enum umc_sa_event ev)
{
	struct ib_port *port = ctx;
	struct umc_sa_client *sa = __atomic_load_n(&port->sa, __ATOMIC_ACQUIRE);
	struct umc_sa_port_attr a;

	if (!sa)
		return; /* still inside umc_sa_open: its caller takes the attributes */
	if (ev == UMC_SA_EVENT_PORT_LOST) {
		umc_sa_query_port(sa, &a);
		/* Down while umc-ctl port-down holds it; otherwise waiting for the SM. */
		atomic_store(&port->state, a.down ? IBV_PORT_DOWN : IBV_PORT_INIT);
		ib_fwd_lost(port);
		umc_dev_event(&port->dev, UMC_EVENT_PORT_ERR);
		return;
	}
	umc_sa_query_port(sa, &a);
	ib_port_apply(port, &a);
	umc_dev_event(&port->dev, UMC_EVENT_PORT_ACTIVE);
}

/* Register with umc-sm (waiting at most @timeout_ms); 0 or -errno. */
static int ib_port_register(struct ib_port *port, unsigned timeout_ms)
{
	struct umc_sa_open_args args = {
		.sm = port->sm,
		.timeout_ms = timeout_ms,
		.event = ib_sa_event,
		.fwd = ib_fwd_update,
		.event_ctx = port,
		.fault = umc_fault_sa, /* the SA stage of injected faults (fault/stage.h) */
		.fault_ctx = &port->dev,
	};
	socklen_t len = sizeof(args.data);
	struct umc_sa_port_attr a;
	struct umc_sa_client *sa;
	int ret;

	getsockname(port->ucast.ep.fd, (struct sockaddr *)&args.data, &len);
	ret = umc_sa_open(&args, &sa);
	if (ret)
		return ret;
	umc_sa_query_port(sa, &a);
	ib_port_apply(port, &a);
	__atomic_store_n(&port->sa, sa, __ATOMIC_RELEASE);
	ib_fwd_subscribe_all(port, sa);
	umc_dev_event(&port->dev, UMC_EVENT_PORT_ACTIVE);
	return 0;
}

/*
 * No SM answered at start-up: keep trying, as a port waits for an SM to
 * come up, so that a umc-sm started later brings the port up.
 */
static void *ib_register_thread(void *arg)
{
	struct ib_port *port = arg;

	while (ib_port_register(port, UMC_SA_REGISTER_TIMEOUT_MS))
		sleep(1);
	return NULL;
}

struct umc_sa_client *ib_port_sa(struct ib_port *port)
{
	return __atomic_load_n(&port->sa, __ATOMIC_ACQUIRE);
}

static struct umc_sa_client *ib_sa(struct umc_device *dev)
{
	return ib_port_sa(to_ib_port(dev));
}

/*
 * At exit the port unregisters, so that its memberships go at once (the
 * kernel leaves a process's groups when its file closes), not when its
 * lease passes.  In a child of fork the list holds the child's own
 * devices only; a port the SM never answered has no client.
 */
static void ib_exit(void)
{
	struct umc_device **devs;
	int n = __umc_dev_list(&devs);

	for (int i = 0; i < n; i++) {
		if (devs[i]->link->link_layer != IBV_LINK_LAYER_INFINIBAND)
			continue;
		struct umc_sa_client *sa = __atomic_exchange_n(&to_ib_port(devs[i])->sa, NULL,
							       __ATOMIC_ACQ_REL);

		umc_sa_close(sa);
	}
}

/* The port of this process: registered with the SM named by UMC_SM. */
static void ib_probe(void)
{
	const char *addr = getenv("UMC_IB_ADDR");
	struct umc_device **devs;
	struct ib_port *port;
	int n = __umc_dev_list(&devs);

	for (int i = 0; i < n; i++)
		if (devs[i]->link->link_layer == IBV_LINK_LAYER_INFINIBAND)
			return; /* one port per process, made once */
	port = calloc(1, sizeof(*port));
	if (!port)
		return;
	port->ucast.ep.fd = -1;
	ib_fwd_init(port);
	if (umc_sa_sm_from_env(&port->sm) ||
	    ib_parse_addr(addr && *addr ? addr : UMC_IB_DEFAULT_ADDR, &port->ipoib) ||
	    ib_data_iface(&port->sm, &port->data_addr, &port->ifindex) || ib_ucast_open(port))
		goto err;
	atomic_store(&port->state, IBV_PORT_INIT);

	struct umc_device *dev = &port->dev;
	struct ibv_device *ib = &dev->ibdev;

	dev->active_mtu = IBV_MTU_2048;
	dev->gid_tbl_len = 1; /* GID 0: subnet prefix + port GUID */
	dev->pkeys[0] = UMC_DEFAULT_PKEY;
	dev->pkey_count = 1;
	snprintf(ib->name, sizeof(ib->name), "umc_ib0");
	snprintf(ib->dev_name, sizeof(ib->dev_name), "uverbs_ib0");
	snprintf(ib->dev_path, sizeof(ib->dev_path), "/sys/class/infiniband_verbs/uverbs_ib0");
	snprintf(ib->ibdev_path, sizeof(ib->ibdev_path), "/sys/class/infiniband/umc_ib0");
	if (umc_dev_register(dev, &umc_ib_link_ops))
		goto err;
	static bool exit_hook; /* atexit handlers are inherited by a child: once */

	if (!exit_hook)
		exit_hook = atexit(ib_exit) == 0;
	/* A program finds the port up if the SM answers within the wait. */
	if (ib_port_register(port, UMC_SA_REGISTER_TIMEOUT_MS))
		(void)umc_thread_start(NULL, true, ib_register_thread, port, "umc-ib-register");
	return;
err:
	if (port->ucast.ep.fd >= 0)
		umc_fd_close(port->ucast.ep.fd);
	free(port);
}

static void ib_query_port(struct umc_device *dev, struct ibv_port_attr *attr)
{
	struct ib_port *port = to_ib_port(dev);

	umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
	attr->state = atomic_load(&port->state);
	attr->max_mtu = port->pi.max_mtu ? port->pi.max_mtu : IBV_MTU_4096;
	attr->active_mtu = dev->active_mtu;
	attr->lid = port->pi.lid;
	attr->sm_lid = port->pi.sm_lid;
	attr->sm_sl = port->pi.sm_sl;
	attr->lmc = 0;
	attr->active_width = port->pi.active_width;
	attr->active_speed = port->pi.active_speed;
	umc_mutex_unlock(&dev->lock);
	attr->gid_tbl_len = dev->gid_tbl_len;
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_CLIENT_REG_SUP;
	attr->max_msg_sz = 1u << 31;
	attr->pkey_tbl_len = UMC_MAX_PKEYS;
	attr->max_vl_num = 1;
	attr->init_type_reply = 0;
	attr->subnet_timeout = 18; /* 4.096 us * 2^18 = 1 s, as OpenSM's default */
	attr->phys_state = 5;	   /* LinkUp */
	attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
}

/* The IB port is selected by its IPoIB address only. */
static int ib_addr_gid(struct umc_device *dev, const struct sockaddr *sa)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

	if (sa->sa_family == AF_INET &&
	    sin->sin_addr.s_addr == to_ib_port(dev)->ipoib.sin_addr.s_addr)
		return 0;
	return -EADDRNOTAVAIL;
}

const struct umc_link_ops umc_ib_link_ops = {
	.name = "ib",
	.transport = IBV_TRANSPORT_IB,
	.link_layer = IBV_LINK_LAYER_INFINIBAND,
	.ah_size = sizeof(struct ib_ah),
	.qp_size = sizeof(struct ib_qp),
	.probe = ib_probe,
	.query_port = ib_query_port,
	.addr_gid = ib_addr_gid,
	.sa = ib_sa,
	.ah_init = ib_ah_init,
	.ah_fini = ib_ah_fini,
	.init_ah_from_wc = ib_init_ah_from_wc,
	.qp_init = ib_qp_init,
	.qp_cleanup = ib_qp_cleanup,
	.mcg_open = ib_mcg_open,
	.mcg_close = ib_mcg_close,
	.rx_burst = ib_rx_burst,
	.xmit = ib_xmit,
};
