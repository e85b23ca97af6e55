// SPDX-License-Identifier: MIT
/*
 * holder.c - who holds a UDP port that a link could not bind (EADDRINUSE),
 * for the message that says so: RoCEv2's 4791 is fixed by the
 * specification, so a local socket that holds it without SO_REUSEADDR
 * keeps the port's groups and unicast from being received, and the user
 * needs to know which process to stop.
 *
 * The socket comes from /proc/net/udp (udp6), which lists this network
 * namespace's UDP sockets with their local address, owner's uid and inode
 * (the kernel's udp4_format_sock/udp6_sock_seq_show); a socket bound to
 * the same address or to the wildcard conflicts.  Its process comes from
 * the /proc/PID/fd links that name socket:[INODE] (umc_pid_of_inode),
 * readable for processes of our own user (and all of them as root); for
 * others the uid is all there is.  Only the error path reads any of this.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/driver.h"
#include "sa/sa_trust.h"

/* Does /proc/net/udp's hex local address @hex name @sa's address or the wildcard? */
static bool addr_conflicts(const char *hex, size_t n, const struct sockaddr *sa)
{
	uint32_t w[4] = {0}, want[4] = {0};
	unsigned words = sa->sa_family == AF_INET ? 1 : 4;

	if (n != 8 * words)
		return false;
	for (unsigned i = 0; i < words; i++) {
		char part[9];

		memcpy(part, hex + 8 * i, 8);
		part[8] = 0;
		w[i] = (uint32_t)strtoul(part, NULL, 16); /* the kernel prints each __be32 so */
	}
	if (sa->sa_family == AF_INET)
		want[0] = ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
	else
		memcpy(want, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	return !memcmp(w, want, 16) || !(w[0] | w[1] | w[2] | w[3]);
}

const char *umc_link_port_holder(const struct sockaddr *sa, char *buf, size_t len)
{
	const char *table = sa->sa_family == AF_INET ? "/proc/net/udp" : "/proc/net/udp6";
	uint16_t port = ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
						      : ((const struct sockaddr_in6 *)sa)->sin6_port);
	FILE *f = fopen(table, "re");
	char line[512];

	snprintf(buf, len, "a socket this process cannot see");
	if (!f)
		return buf;
	while (fgets(line, sizeof(line), f)) {
		char local[40], comm[32];
		unsigned lport, uid;
		unsigned long inode;
		pid_t pid;

		/* "sl: local:port remote:port st tx:rx tr:when retrnsmt uid timeout inode" */
		if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %*s %*s %*s %*s %*s %u %*u %lu", local, &lport,
			   &uid, &inode) != 4 ||
		    lport != port || !addr_conflicts(local, strlen(local), sa))
			continue;
		if ((pid = umc_pid_of_inode(inode, comm, sizeof(comm))))
			snprintf(buf, len, "process %d (%s)", (int)pid, comm);
		else
			snprintf(buf, len, "a socket of uid %u", uid);
		break;
	}
	fclose(f);
	return buf;
}
