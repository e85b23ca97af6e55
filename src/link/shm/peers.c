// SPDX-License-Identifier: MIT
/*
 * peers.c - who receives a group on this host, as the kernel sees it: the
 * UDP sockets of the network namespace that a datagram to the group's
 * address and port on the interface would be given to (sock_diag(7),
 * NETLINK_SOCK_DIAG with SOCK_DIAG_BY_FAMILY; unprivileged, and it lists
 * only this namespace's sockets).
 *
 * The kernel gives a multicast datagram to every socket bound to its port
 * whose bound address is the group or a wildcard and whose bound
 * interface, if any, is the one it arrived on (__udp_is_mcast_sock() in
 * net/ipv4/udp.c, __udp_v6_is_mcast_sock() in net/ipv6/udp.c); an IPv6
 * socket bound to :: or ::ffff:GROUP takes an IPv4 group's unless
 * IPV6_V6ONLY, which the dump does not show, so it counts here.  The test
 * leans to "someone else receives": the cost of a wrong "yes" would be a
 * receiver that misses datagrams; of a wrong "no", only the kernel's work.
 */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "link/shm/shm.h"
#include "sa/sa_trust.h"
#include "umc_int.h"
#include "umc_sys.h"

/* Does the socket @m describes take datagrams to @key's group? */
static bool peer_receives(const struct umc_shm_key *key, const struct inet_diag_msg *m)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	const uint8_t *src = (const uint8_t *)m->id.idiag_src;
	static const uint8_t zero[16];

	if (m->id.idiag_sport != htons(key->port))
		return false;
	if (m->id.idiag_if && m->id.idiag_if != key->ifindex)
		return false;
	if (m->idiag_family == AF_INET)
		return key->family == 4 && (!memcmp(src, zero, 4) || !memcmp(src, key->addr, 4));
	if (!memcmp(src, zero, 16))
		return true;
	if (key->family == 4)
		return !memcmp(src, v4mapped, 12) && !memcmp(src + 12, key->addr, 4);
	return !memcmp(src, key->addr, 16);
}

/* One dump of @family's UDP sockets: 1 when each that receives is in @inodes, 0, -errno. */
static int peers_dump(int nl, int family, const struct umc_shm_key *key, const uint64_t *inodes,
		      int n)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
		.nh = {.nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.r = {.sdiag_family = (uint8_t)family, .sdiag_protocol = IPPROTO_UDP,
		      .idiag_states = ~0u, .id = {.idiag_sport = htons(key->port)}},
	};
	/* Aligned for struct nlmsghdr. */
	uint64_t buf[2048];
	int ok = 1;

	if (umc_sys_send(nl, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		return -errno;
	/* Bounded: a dump of this namespace's UDP sockets ends with NLMSG_DONE. */
	for (int reads = 0; reads < 4096; reads++) {
		ssize_t len = umc_sys_recv(nl, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (len < 0)
			return errno == EINTR ? -EAGAIN : -errno;
		for (; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			bool known = false;

			if (h->nlmsg_type == NLMSG_DONE)
				return ok;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : -EPROTO;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)) || !peer_receives(key, m))
				continue;
			for (int i = 0; i < n && !known; i++)
				known = inodes[i] == m->idiag_inode;
			if (!known)
				ok = 0; /* read on to the end: the next dump must not see this one's rest */
		}
	}
	return -EPROTO;
}

int umc_shm_peers_ok(const struct umc_shm_key *key, const uint64_t *inodes, int n)
{
	int nl = UMC_FD_NEW(umc_sock_diag_open(), false);
	int ret;

	if (nl < 0)
		return -errno;
	ret = key->family == 4 ? peers_dump(nl, AF_INET, key, inodes, n) : 1;
	if (ret == 1)
		ret = peers_dump(nl, AF_INET6, key, inodes, n);
	umc_fd_close(nl);
	return ret;
}
