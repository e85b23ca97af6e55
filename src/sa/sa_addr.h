/* SPDX-License-Identifier: MIT */
/*
 * sa_addr.h - "ADDR:PORT" text for the SM's address (UMC_SM, umc-sm
 * --listen, umc-sa --sm).
 */
#ifndef UMC_SA_ADDR_H
#define UMC_SA_ADDR_H

#include <netinet/in.h>
#include <stdint.h>

/**
 * umc_sa_parse_endpoint - parse "ADDR:PORT", "ADDR" or ":PORT".
 * @s:            the text; ADDR is an IPv4 address or a host name that
 *                resolves to one, PORT 0..65535
 * @default_port: the port when none is given
 * @out:          the endpoint (AF_INET, network order); ADDR defaults to
 *                127.0.0.1
 *
 * Context: may block in getaddrinfo() for a host name.
 * Returns: 0, or -EINVAL for text that is not an endpoint, -ENOENT for a
 * name that does not resolve.
 */
int umc_sa_parse_endpoint(const char *s, uint16_t default_port, struct sockaddr_in *out);

#endif /* UMC_SA_ADDR_H */
