/* SPDX-License-Identifier: MIT */
/*
 * gid.c - GIDs and socket addresses.
 *
 * On RoCEv2 a GID is an IPv6 address; an IPv4 address appears as the
 * IPv4-mapped ::ffff:a.b.c.d (kernel rdma_ip2gid, cma_iboe_set_mgid).
 */
#include <string.h>

#include "verbs/verbs_int.h"

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool umc_gid_is_v4mapped(const union ibv_gid *gid)
{
	return memcmp(gid->raw, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0;
}

/* rdma_is_multicast_addr(): ff00::/8, or IPv4-mapped 224.0.0.0/4. */
bool umc_gid_is_multicast(const union ibv_gid *gid)
{
	if (gid->raw[0] == 0xff)
		return true;
	return umc_gid_is_v4mapped(gid) && (gid->raw[12] & 0xf0) == 0xe0;
}

void umc_gid_from_ip(union ibv_gid *gid, bool v4, const void *addr)
{
	if (v4) {
		memcpy(gid->raw, v4mapped_prefix, sizeof(v4mapped_prefix));
		memcpy(gid->raw + 12, addr, 4);
	} else {
		memcpy(gid->raw, addr, 16);
	}
}

UMC_HOT
int umc_gid_to_ip(const union ibv_gid *gid, uint8_t *addr)
{
	if (umc_gid_is_v4mapped(gid)) {
		memcpy(addr, gid->raw + 12, 4);
		return 4;
	}
	memcpy(addr, gid->raw, 16);
	return 6;
}

void umc_gid_from_sockaddr(union ibv_gid *gid, const struct sockaddr *sa)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET)
		umc_gid_from_ip(gid, true, &((const struct sockaddr_in *)sa)->sin_addr);
	else if (sa->sa_family == AF_INET6)
		umc_gid_from_ip(gid, false, &((const struct sockaddr_in6 *)sa)->sin6_addr);
}

socklen_t umc_gid_to_sockaddr(const union ibv_gid *gid, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (umc_gid_is_v4mapped(gid)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, gid->raw + 12, 4);
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	memcpy(&sin6->sin6_addr, gid->raw, 16);
	return sizeof(*sin6);
}
