// SPDX-License-Identifier: MIT
/*
 * gid_gone.c - join after the id's source address left the interface.
 *
 *   gid_gone LOCAL_IP GROUP
 *
 * Binds an RDMA_PS_UDP id to LOCAL_IP, prints "bound", waits for a line on
 * stdin (the test removes the address meanwhile, or not), joins GROUP as a
 * full member and prints the event: "<event name> status <n>".  Public API
 * only.  Exit 0 when the join call and the event retrieval succeeded.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <rdma/rdma_cma.h>

int main(int argc, char **argv)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, grp = {.sin_family = AF_INET};
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	char line[16];

	if (argc != 3 || inet_pton(AF_INET, argv[1], &src.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[2], &grp.sin_addr) != 1) {
		fprintf(stderr, "usage: %s LOCAL_IP GROUP\n", argv[0]);
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&src)) {
		perror("gid_gone: bind");
		return 1;
	}
	printf("bound\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (rdma_join_multicast(id, (struct sockaddr *)&grp, NULL) || rdma_get_cm_event(ch, &ev)) {
		perror("gid_gone: join");
		return 1;
	}
	printf("%s status %d\n", rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	rdma_leave_multicast(id, (struct sockaddr *)&grp);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}
