/* SPDX-License-Identifier: MIT */
/*
 * common.h - the small part of rdma-core's librdmacm/examples/common.h that
 * its mckey.c example relies on, written for umcast's compatibility test
 * (tests/integ/test_mckey_compat.sh).  mckey.c is compiled unchanged
 * against umcast's installed headers with this header next to it.
 *
 * mckey.c takes from common.h: pthread_t / pthread_create, htobe32 and the
 * rdma_cm / ib headers, and create_event_channel().  The rsocket-based
 * helpers of the original are not needed and not provided.
 */
#ifndef UMC_COMPAT_COMMON_H
#define UMC_COMPAT_COMMON_H

#include <endian.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>

/*
 * create_event_channel - rdma_create_event_channel() that explains a failure
 * on stderr ("No RDMA devices were detected" for ENODEV, else perror).
 *
 * Returns: the channel, or NULL with errno set.
 */
struct rdma_event_channel *create_event_channel(void);

#endif /* UMC_COMPAT_COMMON_H */
