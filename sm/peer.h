/* SPDX-License-Identifier: MIT */
/*
 * peer.h - who sent a datagram, as the daemon asks the kernel (peer.c).
 */
#ifndef UMC_SM_PEER_H
#define UMC_SM_PEER_H

#include "sm.h"

int umc_sm_peer_open(void);
uint64_t umc_sm_peer_key(int fd, const struct sockaddr_in *src, const struct sockaddr_in *dst);

#endif /* UMC_SM_PEER_H */
