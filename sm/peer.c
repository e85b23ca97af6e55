// SPDX-License-Identifier: MIT
/*
 * peer.c - who sent a datagram: the source host of the caps (hosts.c), as
 * the daemon finds it out.
 *
 * Every local process may send from any address of 127/8, so on this
 * host the address names nobody.  The kernel knows the owner of the
 * sending socket: one sock_diag request (NETLINK_SOCK_DIAG, the interface
 * of ss(8); no privilege needed) for the UDP socket that talks from the
 * datagram's source to the address it was sent to gives its UID, so the
 * host is that user.  No such socket on this host means another machine:
 * the host is the source address.  When the kernel cannot tell (no
 * sock_diag, or the sender closed its socket at once), a 127/8 source is
 * "this host", one host for all of them.
 */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "peer.h"

enum { PEER_WAIT_MS = 100 }; /* the kernel answers at once; a bound all the same */

/**
 * umc_sm_peer_open - a sock_diag socket for umc_sm_peer_key().
 *
 * Returns: the socket, or -1 (errno) when the kernel has no sock_diag.
 */
int umc_sm_peer_open(void)
{
	struct timeval tv = { .tv_usec = PEER_WAIT_MS * 1000 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/*
 * The owner of the UDP socket of this host bound to @src that sends to
 * @dst: 0 and *@uid, or -errno.
 */
static int socket_owner(int fd, const struct sockaddr_in *src, const struct sockaddr_in *dst,
			uint32_t *uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} q = {
		.nlh = { .nlmsg_len = sizeof(q), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 },
		.req = { .sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_UDP,
			 .idiag_states = ~0u },
	};
	union {
		struct nlmsghdr nlh;
		uint8_t buf[512];
	} a;
	const struct inet_diag_msg *msg;
	ssize_t n;

	/* The socket that would receive a datagram from @dst to @src (udp_dump_one). */
	q.req.id.idiag_sport = dst->sin_port;
	q.req.id.idiag_dport = src->sin_port;
	q.req.id.idiag_src[0] = dst->sin_addr.s_addr;
	q.req.id.idiag_dst[0] = src->sin_addr.s_addr;
	q.req.id.idiag_cookie[0] = q.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (send(fd, &q, sizeof(q), 0) != (ssize_t)sizeof(q))
		return -errno;
	n = recv(fd, &a, sizeof(a), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(a.nlh) || !NLMSG_OK(&a.nlh, (size_t)n))
		return -EBADMSG;
	if (a.nlh.nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(&a.nlh);

		return a.nlh.nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ? e->error : -EBADMSG;
	}
	if (a.nlh.nlmsg_type != SOCK_DIAG_BY_FAMILY || a.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(*msg)))
		return -EBADMSG;
	msg = NLMSG_DATA(&a.nlh);
	/*
	 * Only a socket bound to @src itself: one bound to the wildcard
	 * address would also be found for a datagram from another machine
	 * that merely uses its port number.
	 */
	if (msg->id.idiag_src[0] != src->sin_addr.s_addr || msg->id.idiag_sport != src->sin_port)
		return -ENOENT;
	*uid = msg->idiag_uid;
	return 0;
}

/**
 * umc_sm_peer_key - the source host of a datagram (struct umc_sm_out.source).
 * @fd:  umc_sm_peer_open()'s socket, or -1
 * @src: where the datagram came from
 * @dst: our address it was sent to (NULL: not known)
 *
 * Returns: umc_sm_host_key_make(UMC_SM_HOST_USER, uid) when a socket of
 * this host sends from @src; else umc_sm_host_key_addr(): "this host" for
 * a 127/8 source, the address for any other.
 */
uint64_t umc_sm_peer_key(int fd, const struct sockaddr_in *src, const struct sockaddr_in *dst)
{
	uint32_t uid;

	if (fd >= 0 && dst && !socket_owner(fd, src, dst, &uid))
		return umc_sm_host_key_make(UMC_SM_HOST_USER, uid);
	return umc_sm_host_key_addr(src);
}
