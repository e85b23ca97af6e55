// SPDX-License-Identifier: MIT
/*
 * port.c - RoCEv2 ports: one per network interface that is up and has an
 * IP address, loopback included, named "umc_<ifname>", with one port.
 *
 * The GID table lists the interface's IPv4 addresses (as ::ffff:a.b.c.d)
 * first, then its IPv6 addresses, so GID index 0 is the IPv4-mapped
 * address when there is one (kernel rdma_ip2gid; the GID cache puts the
 * interface's addresses in this order on rxe).  Probing again (an address
 * that is not found may have appeared since) appends new ports and GIDs;
 * existing GID indices never move.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/roce/roce.h"

int roce_setopt(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

#ifndef UDP_NO_CHECK6_RX
#define UDP_NO_CHECK6_RX 102
#endif

int roce_rx_sockopts(int fd, bool v4, bool pktinfo)
{
	int ret;

	umc_link_rcvbuf(fd);
	if (v4) {
		ret = pktinfo ? roce_setopt(fd, IPPROTO_IP, IP_PKTINFO, 1) : 0;
		ret = ret ?: roce_setopt(fd, IPPROTO_IP, IP_RECVTTL, 1);
		return ret ?: roce_setopt(fd, IPPROTO_IP, IP_RECVTOS, 1);
	}
	ret = roce_setopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
	ret = ret ?: pktinfo ? roce_setopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1) : 0;
	ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
	ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
	ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_FLOWINFO, 1);
	/* rxe and NICs send UDP checksum 0, which IPv6 drops by default. */
	return ret ?: roce_setopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1);
}

void roce_rxq_init(struct roce_rxq *q)
{
	for (int i = 0; i < UMC_RX_BATCH; i++) {
		q->iov[i] = (struct iovec){q->buf[i], UMC_RX_SLOT};
		q->msg[i].msg_hdr.msg_iov = &q->iov[i];
		q->msg[i].msg_hdr.msg_iovlen = 1;
	}
	roce_rxq_reset(q, 0, UMC_RX_BATCH);
}

UMC_HOT
void roce_rxq_reset(struct roce_rxq *q, int base, int n)
{
	for (int i = base; i < base + n; i++) {
		struct msghdr *mh = &q->msg[i].msg_hdr;

		mh->msg_name = &q->name[i];
		mh->msg_namelen = sizeof(q->name[i]);
		mh->msg_control = q->cmsg[i];
		mh->msg_controllen = sizeof(q->cmsg[i]);
		mh->msg_flags = 0;
	}
}

socklen_t roce_abstract_name(struct sockaddr_un *a, const char *fmt, ...)
{
	size_t room = sizeof(a->sun_path) - 1;
	va_list ap;
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	va_start(ap, fmt);
	n = vsnprintf(a->sun_path + 1, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= room)
		n = (int)room - 1;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int roce_take_fds(struct msghdr *mh, int *fds, int max)
{
	int n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(fd));
			if (n < max)
				fds[n++] = fd;
			else
				umc_sys_close(fd); /* never recorded: not ours to keep */
		}
	}
	return n;
}

int roce_take_fd(struct msghdr *mh)
{
	int fd = -1;

	roce_take_fds(mh, &fd, 1);
	return fd;
}

bool roce_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(UMC_UC_MSG_QPNS * sizeof(int))];
	} cb;
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (nfd > UMC_UC_MSG_QPNS)
		return false;
	if (nfd > 0) {
		memset(&cb, 0, sizeof(cb));
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int));
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), fds, (size_t)nfd * sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len;
}

bool roce_send_fd(int sock, const void *buf, size_t len, int fd)
{
	return roce_send_fds(sock, buf, len, &fd, fd >= 0);
}

int roce_gid_of_family(const struct umc_device *dev, bool v4)
{
	for (int i = 0; i < dev->gid_count; i++)
		if (umc_gid_is_v4mapped(&dev->gids[i]) == v4)
			return i;
	return -1;
}

socklen_t roce_gid_sockaddr(struct umc_device *dev, int gid_index, uint16_t port,
			    struct sockaddr_storage *ss)
{
	socklen_t len = umc_gid_to_sockaddr(&dev->gids[gid_index], port, ss);
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
		s6->sin6_scope_id = to_roce_port(dev)->ifindex;
	return len;
}

/* rxe: the IB MTU is the netdev MTU less the RoCE headers, rounded down. */
enum ibv_mtu umc_mtu_from_netdev(unsigned mtu)
{
	unsigned room = mtu > UMC_ROCE_MTU_OVERHEAD ? mtu - UMC_ROCE_MTU_OVERHEAD : 0;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

static unsigned roce_sysfs_mtu(const char *ifname)
{
	char path[64 + IF_NAMESIZE];
	unsigned mtu = 1500;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ifname);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%u", &mtu) != 1)
			mtu = 1500;
		fclose(f);
	}
	return mtu;
}

/* The port of interface @ifname, made and registered if new; list lock held. */
static struct umc_device *roce_port_get(const char *ifname)
{
	struct umc_device **devs;
	int n = __umc_dev_list(&devs);
	struct roce_port *rp;

	for (int i = 0; i < n; i++)
		if (devs[i]->link->link_layer == IBV_LINK_LAYER_ETHERNET &&
		    strcmp(to_roce_port(devs[i])->ifname, ifname) == 0)
			return devs[i];
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return NULL;
	snprintf(rp->ifname, sizeof(rp->ifname), "%s", ifname);
	rp->ifindex = if_nametoindex(ifname);
	pthread_mutex_init(&rp->shm_lock, NULL);
	rp->netdev_mtu = roce_sysfs_mtu(ifname);

	struct umc_device *dev = &rp->dev;
	struct ibv_device *ib = &dev->ibdev;

	dev->active_mtu = umc_mtu_from_netdev(rp->netdev_mtu);
	/* Locally administered EUI-64 made of the pid and the interface index. */
	dev->guid = 0x0200000000000000ull | ((uint64_t)getpid() << 16) | rp->ifindex;
	dev->gid_tbl_len = UMC_MAX_GIDS;
	dev->pkeys[0] = UMC_DEFAULT_PKEY; /* one partition, as rxe */
	dev->pkey_count = 1;
	snprintf(ib->name, sizeof(ib->name), "umc_%s", ifname);
	snprintf(ib->dev_name, sizeof(ib->dev_name), "uverbs_%s", ifname);
	snprintf(ib->dev_path, sizeof(ib->dev_path), "/sys/class/net/%s", ifname);
	snprintf(ib->ibdev_path, sizeof(ib->ibdev_path), "/sys/class/net/%s", ifname);
	if (umc_dev_register(dev, &umc_roce_link_ops)) {
		free(rp);
		return NULL;
	}
	return dev;
}

static void roce_probe(void)
{
	struct ifaddrs *ifa_list, *ifa;

	if (getifaddrs(&ifa_list))
		return;
	/* Two passes so that every port lists its IPv4 GIDs first. */
	for (int family = AF_INET; family; family = family == AF_INET ? AF_INET6 : 0) {
		for (ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
			union ibv_gid gid;

			if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != family ||
			    !(ifa->ifa_flags & IFF_UP))
				continue;
			struct umc_device *dev = roce_port_get(ifa->ifa_name);

			if (!dev)
				continue;
			to_roce_port(dev)->loopback = ifa->ifa_flags & IFF_LOOPBACK;
			umc_gid_from_sockaddr(&gid, ifa->ifa_addr);
			umc_dev_add_gid(dev, &gid);
		}
	}
	freeifaddrs(ifa_list);
}

static void roce_query_port(struct umc_device *dev, struct ibv_port_attr *attr)
{
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = dev->active_mtu;
	attr->gid_tbl_len = dev->gid_tbl_len;
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	attr->max_msg_sz = 1u << 31;
	attr->pkey_tbl_len = UMC_MAX_PKEYS;
	attr->max_vl_num = 1;
	attr->active_width = 1; /* 1X */
	attr->active_speed = 1; /* SDR */
	attr->phys_state = 5;	/* LinkUp */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
}

static int roce_netdev(struct umc_device *dev, char *ifname, unsigned *ifindex)
{
	struct roce_port *rp = to_roce_port(dev);

	memcpy(ifname, rp->ifname, IF_NAMESIZE);
	*ifindex = rp->ifindex;
	return 0;
}

/* A RoCE port is selected by any of its IP addresses (IP-based GIDs). */
static int roce_addr_gid(struct umc_device *dev, const struct sockaddr *sa)
{
	int count = __atomic_load_n(&dev->gid_count, __ATOMIC_ACQUIRE);
	union ibv_gid gid;

	umc_gid_from_sockaddr(&gid, sa);
	for (int i = 0; i < count; i++)
		if (memcmp(&dev->gids[i], &gid, sizeof(gid)) == 0)
			return i;
	return -EADDRNOTAVAIL;
}

static unsigned roce_netdev_mtu(struct umc_device *dev)
{
	return to_roce_port(dev)->netdev_mtu;
}

/* GIDs are never removed from the table, so that indices stay put: ask the interfaces. */
static bool roce_gid_live(struct umc_device *dev, int gid_index)
{
	const union ibv_gid *want = &dev->gids[gid_index];
	struct ifaddrs *ifa_list, *ifa;
	bool live = false;

	if (getifaddrs(&ifa_list))
		return true; /* cannot tell: as before */
	for (ifa = ifa_list; ifa && !live; ifa = ifa->ifa_next) {
		union ibv_gid gid;

		if (!ifa->ifa_addr || (ifa->ifa_addr->sa_family != AF_INET &&
				       ifa->ifa_addr->sa_family != AF_INET6) ||
		    strcmp(ifa->ifa_name, to_roce_port(dev)->ifname) != 0)
			continue;
		umc_gid_from_sockaddr(&gid, ifa->ifa_addr);
		live = memcmp(&gid, want, sizeof(gid)) == 0;
	}
	freeifaddrs(ifa_list);
	return live;
}

/* A UDP connect() with the port's interface as the multicast interface. */
static int roce_mcast_route(struct umc_device *dev, const union ibv_gid *mgid)
{
	unsigned ifindex = to_roce_port(dev)->ifindex;
	bool v4 = umc_gid_is_v4mapped(mgid);
	struct sockaddr_storage to;
	socklen_t len = umc_gid_to_sockaddr(mgid, UMC_ROCEV2_UDP_PORT, &to);
	int fd = UMC_FD_NEW(socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), false);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (v4) {
		struct ip_mreqn mr = {.imr_ifindex = (int)ifindex};

		ret = setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr));
	} else {
		((struct sockaddr_in6 *)&to)->sin6_scope_id = ifindex;
		ret = roce_setopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, (int)ifindex);
	}
	if (!ret)
		ret = connect(fd, (struct sockaddr *)&to, len);
	umc_fd_close(fd);
	return ret ? -ENODEV : 0;
}

const struct umc_link_ops umc_roce_link_ops = {
	.name = "roce",
	.transport = IBV_TRANSPORT_IB,
	.link_layer = IBV_LINK_LAYER_ETHERNET,
	.ah_size = sizeof(struct roce_ah),
	.qp_size = sizeof(struct roce_qp),
	.probe = roce_probe,
	.query_port = roce_query_port,
	.netdev = roce_netdev,
	.netdev_mtu = roce_netdev_mtu,
	.gid_live = roce_gid_live,
	.mcast_route = roce_mcast_route,
	.addr_gid = roce_addr_gid,
	.ah_init = roce_ah_init,
	.init_ah_from_wc = roce_init_ah_from_wc,
	.qp_init = roce_qp_init,
	.qp_cleanup = roce_qp_cleanup,
	.mcg_open = roce_mcg_open,
	.mcg_close = roce_mcg_close,
	.membership = roce_membership,
	.rx_burst = roce_rx_burst,
	.xmit = roce_xmit,
};
