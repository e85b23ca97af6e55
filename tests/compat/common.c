/* SPDX-License-Identifier: MIT */
/* common.c - see common.h. */
#include <errno.h>
#include <stdio.h>

#include "common.h"

struct rdma_event_channel *create_event_channel(void)
{
	struct rdma_event_channel *channel = rdma_create_event_channel();

	if (!channel) {
		int err = errno;

		if (err == ENODEV)
			fprintf(stderr, "No RDMA devices were detected\n");
		else
			perror("failed to create RDMA CM event channel");
		errno = err;
	}
	return channel;
}
