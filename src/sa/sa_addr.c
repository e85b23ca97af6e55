// SPDX-License-Identifier: MIT
/*
 * sa_addr.c - parse the SM's "ADDR:PORT" (sa_addr.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_addr.h"
#include "umc_param.h"

int umc_sa_parse_endpoint(const char *s, uint16_t default_port, struct sockaddr_in *out)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *res;
	char host[256];
	const char *colon = strrchr(s, ':');
	size_t hlen = colon ? (size_t)(colon - s) : strlen(s);
	unsigned long port = default_port;
	char *end;

	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = 0;
	if (colon) {
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || port > 65535)
			return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	if (!host[0]) {
		out->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return 0;
	}
	if (inet_pton(AF_INET, host, &out->sin_addr) == 1)
		return 0;
	if (getaddrinfo(host, NULL, &hints, &res))
		return -ENOENT;
	out->sin_addr = ((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

int umc_sa_sm_from_env(struct sockaddr_in *out)
{
	const char *s = getenv("UMC_SM");

	if (!s || !*s)
		return -ENOENT;
	return umc_sa_parse_endpoint(s, UMC_SM_UDP_PORT, out);
}
