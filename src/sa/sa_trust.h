/* SPDX-License-Identifier: MIT */
/*
 * sa_trust.h - whom a umcast process lets stand between it and its
 * traffic on this host: the process that holds umc-sm's address (the SA
 * client, sa_client.c) and the RoCE unicast demultiplexer of an address
 * (link/roce/uc/).  Both are found by the kernel's word on who owns a
 * socket: sock_diag(7) for a UDP socket, SO_PEERCRED for a connection.
 */
#ifndef UMC_SA_TRUST_H
#define UMC_SA_TRUST_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/**
 * umc_trusted_uid - may a process of @uid be umc-sm or a demultiplexer to us?
 * @uid: its effective uid (sock_diag's, SO_PEERCRED's)
 * @sm:  asked about umc-sm: its system user also counts
 *
 * Trusted: our own effective uid, root, the users of UMC_TRUST_UIDS (a
 * comma-separated list of uids or user names, read once), and for @sm the
 * system user UMC_SM_USER that the Debian package runs umc-sm as, if the
 * host has it.  Context: any thread; the first call reads the environment
 * and the user database (getpwnam_r).
 * Returns: true if trusted.
 */
bool umc_trusted_uid(uid_t uid, bool sm);

/* A UDP socket of this host as sock_diag(7) describes it. */
struct umc_udp_sock {
	uint32_t uid;		 /* its owner's */
	uint64_t inode;		 /* its inode: the same socket while it lives */
	struct sockaddr_in bound; /* its local address and port (0.0.0.0: every address) */
};

/**
 * umc_udp_receiver - the UDP socket of this network namespace that the
 * kernel gives a datagram from @from to @to (udp_dump_one() in
 * net/ipv4/udp_diag.c looks it up as the receive path does: a connected
 * or bound socket, one bound to the wildcard address).
 * @nl:   a NETLINK_SOCK_DIAG socket (SOCK_DGRAM), with a receive timeout
 * @to:   the destination address and port
 * @from: the source address and port
 * @out:  the socket
 *
 * Context: any; no privilege needed.  Returns: 0, -ENOENT (no socket
 * receives it), or -errno (no sock_diag: -EPROTONOSUPPORT; a timeout).
 */
int umc_udp_receiver(int nl, const struct sockaddr_in *to, const struct sockaddr_in *from,
		     struct umc_udp_sock *out);

/**
 * umc_sock_diag_open - a NETLINK_SOCK_DIAG socket for umc_udp_receiver(),
 * with a receive timeout of 100 ms (the kernel answers at once).
 *
 * Returns: the socket, or -1 (errno) when the kernel has no sock_diag.
 */
int umc_sock_diag_open(void);

/**
 * umc_pid_of_inode - the process with a descriptor for socket @inode,
 * for a message: its pid and, in @comm (@len bytes), its name; or 0
 * (none, or only processes of other users have one: their /proc/PID/fd
 * cannot be read, but as root).  Slow: it reads /proc.
 */
pid_t umc_pid_of_inode(uint64_t inode, char *comm, size_t len);

#endif /* UMC_SA_TRUST_H */
