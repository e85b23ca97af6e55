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

#include "peer.h"
#include "sa/sa_trust.h"

/**
 * umc_sm_peer_open - a sock_diag socket for umc_sm_peer_key().
 *
 * Returns: the socket, or -1 (errno) when the kernel has no sock_diag.
 */
int umc_sm_peer_open(void)
{
	return umc_sock_diag_open();
}

/*
 * The owner of the UDP socket of this host bound to @src that sends to
 * @dst: 0 and *@uid, or -errno.
 */
static int socket_owner(int fd, const struct sockaddr_in *src, const struct sockaddr_in *dst,
			uint32_t *uid)
{
	struct umc_udp_sock s;
	int ret = umc_udp_receiver(fd, src, dst, &s);

	if (ret)
		return ret;
	/*
	 * Only a socket bound to @src itself: one bound to the wildcard
	 * address would also be found for a datagram from another machine
	 * that merely uses its port number.
	 */
	if (s.bound.sin_addr.s_addr != src->sin_addr.s_addr || s.bound.sin_port != src->sin_port)
		return -ENOENT;
	*uid = s.uid;
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
