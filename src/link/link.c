// SPDX-License-Identifier: MIT
/*
 * link.c - the registry of link layers and the default ops.
 *
 * Link layers are listed explicitly here, in the order their devices
 * appear.  umc_link_complete() copies a link's table over the defaults
 * below (only its non-NULL ops), as rdma-core's verbs_set_ops() does over
 * its dummy ops, so that the core calls every op without a NULL test.
 */
#include <errno.h>
#include <pthread.h>

#include "link/driver.h"

static void default_probe(void)
{
}

static void default_query_port(struct umc_device *dev, struct ibv_port_attr *attr)
{
}

static int default_netdev(struct umc_device *dev, char *ifname, unsigned *ifindex)
{
	return -ENODEV;
}

static unsigned default_netdev_mtu(struct umc_device *dev)
{
	return 0;
}

static bool default_gid_live(struct umc_device *dev, int gid_index)
{
	return true;
}

static int default_mcast_route(struct umc_device *dev, const union ibv_gid *mgid)
{
	return -EOPNOTSUPP;
}

static struct umc_sa_client *default_sa(struct umc_device *dev)
{
	return NULL;
}

static int default_addr_gid(struct umc_device *dev, const struct sockaddr *sa)
{
	return -EADDRNOTAVAIL;
}

static int default_ah_init(struct umc_device *dev, const struct ibv_ah_attr *attr,
			   struct umc_ah *ah)
{
	return -EOPNOTSUPP;
}

static void default_ah_fini(struct umc_device *dev, struct umc_ah *ah)
{
}

static int default_init_ah_from_wc(struct umc_device *dev, const struct ibv_wc *wc,
				   const uint8_t *grh, struct ibv_ah_attr *attr)
{
	return -EOPNOTSUPP;
}

static int default_qp_init(struct umc_qp *qp)
{
	return 0;
}

static void default_qp_cleanup(struct umc_qp *qp)
{
}

static int default_mcg_open(struct umc_device *dev, struct umc_mcg *mcg, uint16_t mlid)
{
	return -EOPNOTSUPP;
}

static void default_mcg_close(struct umc_device *dev, struct umc_mcg *mcg)
{
}

static int default_membership(struct umc_device *dev, struct umc_mcg *mcg, bool join)
{
	return -EOPNOTSUPP;
}

static int default_rx_burst(struct umc_device *dev, struct umc_rx_ep *ep,
			    struct umc_rx_pkt *pkts, int max, bool *more,
			    const struct umc_rx_lend *lend)
{
	*more = false;
	return 0;
}

static int default_xmit(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n)
{
	return -EOPNOTSUPP;
}

static const struct umc_link_ops umc_link_default_ops = {
	.name = "none",
	.transport = IBV_TRANSPORT_UNKNOWN,
	.link_layer = IBV_LINK_LAYER_UNSPECIFIED,
	.ah_size = sizeof(struct umc_ah),
	.qp_size = sizeof(struct umc_qp),
	.probe = default_probe,
	.query_port = default_query_port,
	.netdev = default_netdev,
	.netdev_mtu = default_netdev_mtu,
	.gid_live = default_gid_live,
	.mcast_route = default_mcast_route,
	.sa = default_sa,
	.addr_gid = default_addr_gid,
	.ah_init = default_ah_init,
	.ah_fini = default_ah_fini,
	.init_ah_from_wc = default_init_ah_from_wc,
	.qp_init = default_qp_init,
	.qp_cleanup = default_qp_cleanup,
	.mcg_open = default_mcg_open,
	.mcg_close = default_mcg_close,
	.membership = default_membership,
	.rx_burst = default_rx_burst,
	.xmit = default_xmit,
};

static const struct umc_link_ops *const umc_link_tables[] = {
	&umc_roce_link_ops,
	&umc_ib_link_ops,
};

enum { UMC_NLINKS = sizeof(umc_link_tables) / sizeof(umc_link_tables[0]) };

static struct umc_link_ops umc_link_full[UMC_NLINKS];
static const struct umc_link_ops *umc_link_list[UMC_NLINKS];
static pthread_once_t umc_link_once = PTHREAD_ONCE_INIT;

#define LINK_SET(dst, src, field)                                                                  \
	do {                                                                                       \
		if ((src)->field)                                                                  \
			(dst)->field = (src)->field;                                               \
	} while (0)

static void umc_links_init(void)
{
	for (int i = 0; i < UMC_NLINKS; i++) {
		const struct umc_link_ops *src = umc_link_tables[i];
		struct umc_link_ops *dst = &umc_link_full[i];

		*dst = umc_link_default_ops;
		LINK_SET(dst, src, name);
		dst->transport = src->transport;
		dst->link_layer = src->link_layer;
		LINK_SET(dst, src, ah_size);
		LINK_SET(dst, src, qp_size);
		LINK_SET(dst, src, probe);
		LINK_SET(dst, src, query_port);
		LINK_SET(dst, src, netdev);
		LINK_SET(dst, src, netdev_mtu);
		LINK_SET(dst, src, gid_live);
		LINK_SET(dst, src, mcast_route);
		LINK_SET(dst, src, sa);
		LINK_SET(dst, src, addr_gid);
		LINK_SET(dst, src, ah_init);
		LINK_SET(dst, src, ah_fini);
		LINK_SET(dst, src, init_ah_from_wc);
		LINK_SET(dst, src, qp_init);
		LINK_SET(dst, src, qp_cleanup);
		LINK_SET(dst, src, mcg_open);
		LINK_SET(dst, src, mcg_close);
		LINK_SET(dst, src, membership);
		LINK_SET(dst, src, rx_burst);
		LINK_SET(dst, src, xmit);
		umc_link_list[i] = dst;
	}
}

int umc_links(const struct umc_link_ops *const **list)
{
	pthread_once(&umc_link_once, umc_links_init);
	*list = umc_link_list;
	return UMC_NLINKS;
}

const struct umc_link_ops *umc_link_complete(const struct umc_link_ops *ops)
{
	pthread_once(&umc_link_once, umc_links_init);
	for (int i = 0; i < UMC_NLINKS; i++)
		if (umc_link_tables[i] == ops)
			return &umc_link_full[i];
	return &umc_link_default_ops;
}
