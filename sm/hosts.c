// SPDX-License-Identifier: MIT
/*
 * hosts.c - umc-sm's source hosts: who the caps count against.
 *
 * A port belongs to the source host it registered from.  From another
 * machine that is its IPv4 address.  On this machine an address means
 * nothing (every process can send from any address of 127/8), so main.c
 * asks the kernel who owns the sending socket and the host is that user;
 * when no owner can be found, every such port shares one "this host".
 * A host counts its ports, their memberships and their open GetTable
 * transfers against --max-ports-per-host, --max-groups-per-host and
 * --max-rmpp-per-host, and holds their scanning queries while they wait
 * (defer.c).  It exists while it has a port.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

#include "sm.h"

static struct umc_sm_host *host_of(struct umc_hnode *n)
{
	return (void *)((char *)n - offsetof(struct umc_sm_host, node));
}

/**
 * umc_sm_host_key_addr - the source host an address alone tells.
 * @src: a datagram's source
 *
 * Returns: UMC_SM_HOST_LOCAL for all of 127/8, else UMC_SM_HOST_ADDR with
 * the address.
 */
uint64_t umc_sm_host_key_addr(const struct sockaddr_in *src)
{
	uint32_t addr = ntohl(src->sin_addr.s_addr);

	if ((addr >> 24) == 127)
		return umc_sm_host_key_make(UMC_SM_HOST_LOCAL, 0);
	return umc_sm_host_key_make(UMC_SM_HOST_ADDR, addr);
}

/**
 * umc_sm_host_key - the source host of a datagram.
 * @sm:  the state (sm->out.source)
 * @src: where it came from
 * @dst: our address it was sent to, or NULL if not known
 *
 * Returns: sm->out.source's key when it has one, else
 * umc_sm_host_key_addr().
 */
uint64_t umc_sm_host_key(struct umc_sm *sm, const struct sockaddr_in *src,
			 const struct sockaddr_in *dst)
{
	if (sm->out.source)
		return sm->out.source(sm->out.ctx, src, dst);
	return umc_sm_host_key_addr(src);
}

/**
 * umc_sm_host_find - the host of @key, or NULL.
 */
struct umc_sm_host *umc_sm_host_find(struct umc_sm *sm, uint64_t key)
{
	uint32_t hv = umc_hash_mix64(key);
	struct umc_hnode *n;

	for (n = umc_hash_bucket(&sm->hosts, hv); n; n = n->next)
		if (n->hash == hv && host_of(n)->key == key)
			return host_of(n);
	return NULL;
}

/**
 * umc_sm_host_get - the host of @key, made if it has no port yet, with
 * one more port counted in.
 * @sm:  the state
 * @key: umc_sm_host_key()
 *
 * Returns: the host, or NULL if out of memory.
 */
struct umc_sm_host *umc_sm_host_get(struct umc_sm *sm, uint64_t key)
{
	struct umc_sm_host *h = umc_sm_host_find(sm, key);

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return NULL;
		h->key = key;
		h->queue_tail = &h->queue;
		umc_hash_insert(&sm->hosts, &h->node, umc_hash_mix64(key));
	}
	h->ports++;
	return h;
}

/**
 * umc_sm_host_put - count a port out of its host; the last one frees it.
 * @sm:   the state
 * @host: the port's host (its memberships, transfers and waiting queries
 *        are gone already)
 */
void umc_sm_host_put(struct umc_sm *sm, struct umc_sm_host *host)
{
	if (--host->ports)
		return;
	umc_hash_remove(&sm->hosts, &host->node);
	free(host);
}

/**
 * umc_sm_host_str - a host key for the log.
 * @key: umc_sm_host_key()
 * @buf: at least 32 bytes
 *
 * Returns: @buf: "10.0.0.1", "user 1000" or "this host".
 */
const char *umc_sm_host_str(uint64_t key, char *buf)
{
	uint32_t id = (uint32_t)key;
	struct in_addr a = { .s_addr = htonl(id) };

	switch (key >> 32) {
	case UMC_SM_HOST_ADDR:
		inet_ntop(AF_INET, &a, buf, 32);
		break;
	case UMC_SM_HOST_USER:
		snprintf(buf, 32, "user %u", id);
		break;
	default:
		snprintf(buf, 32, "this host");
		break;
	}
	return buf;
}
