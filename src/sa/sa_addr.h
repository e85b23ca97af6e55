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

/**
 * umc_sa_sm_from_env - umc-sm's address from the environment.
 * @out: UMC_SM=ADDR:PORT parsed as umc_sa_parse_endpoint() does, with
 *       UMC_SM_UDP_PORT when no port is given
 *
 * Context: may block in getaddrinfo() for a host name.
 * Returns: 0; -ENOENT if UMC_SM is not set (no IB device then) or names
 * no host; -EINVAL if it is not an endpoint.
 */
int umc_sa_sm_from_env(struct sockaddr_in *out);

#endif /* UMC_SA_ADDR_H */
