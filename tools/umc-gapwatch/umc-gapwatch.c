/* SPDX-License-Identifier: MIT */
/*
 * umc-gapwatch - a multicast receiver that notices lost, late and repeated
 * messages and joins its group again after a port event (umc-gapwatch(1)):
 * the application of umc-faults(7)'s worked example.  Written against
 * librdmacm's API only; it builds unchanged against rdma-core.
 *
 * Messages are numbered as umc-mckey(1) numbers them: the payload starts
 * with "UMCK" and the message's number, 32 bits big-endian, counted from
 * 0 by each sender run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static const char usage_text[] =
	"usage: umc-gapwatch [-t SECS] LOCAL_IP GROUP\n"
	"  join GROUP (IPv4) from LOCAL_IP's device; report every gap, late and repeated\n"
	"  message; join again after RDMA_CM_EVENT_MULTICAST_ERROR\n"
	"  -t, --idle SECS  end when nothing arrived for SECS seconds (default 5)\n"
	"  -h, --help       this text\n"
	"      --version    umcast's version\n";

enum { DEPTH = 256, MSG = 2048, GRH = 40, SEEN = 1 << 20 };

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (x) {                                                                           \
			perror("umc-gapwatch: " #x);                                               \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static struct rdma_cm_id *id;
static struct sockaddr_in grp = {.sin_family = AF_INET};
static uint8_t *bufs;
static struct ibv_mr *mr;

/* What a run of one sender taught us: the next number expected, those seen. */
static struct {
	uint32_t next;
	uint8_t *seen; /* numbers below SEEN */
	long received, lost, late, again, runs;
} st;

static void post(uint64_t i)
{
	CHECK(rdma_post_recv(id, (void *)(uintptr_t)i, bufs + i * MSG, MSG, mr));
}

/* The next CM event, which must be @want; returns its status. */
static int cm_wait(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *e;
	int status;

	CHECK(rdma_get_cm_event(id->channel, &e));
	if (e->event != want) {
		fprintf(stderr, "umc-gapwatch: unexpected event %s (%d)\n", rdma_event_str(e->event),
			e->status);
		exit(1);
	}
	status = e->status;
	rdma_ack_cm_event(e);
	return status;
}

static void join(const char *what)
{
	CHECK(rdma_join_multicast(id, (struct sockaddr *)&grp, NULL));
	CHECK(cm_wait(RDMA_CM_EVENT_MULTICAST_JOIN));
	printf("%s %s\n", what, inet_ntoa(grp.sin_addr));
}

/* Message @num arrived: a gap before it, late, again, or in order. */
static void seen(uint32_t num)
{
	if (num == 0) { /* a sender run starts over */
		printf("run %ld starts\n", ++st.runs);
		memset(st.seen, 0, SEEN);
		st.next = 0;
	}
	if (num < SEEN && st.seen[num]) {
		printf("again: message %u\n", num);
		st.again++;
	} else if (num < st.next) {
		printf("late: message %u\n", num);
		st.late++;
		st.lost--; /* it was counted lost */
	} else if (num > st.next) {
		printf("gap: messages %u to %u lost\n", st.next, num - 1);
		st.lost += num - st.next;
	}
	if (num < SEEN)
		st.seen[num] = 1;
	if (num >= st.next)
		st.next = num + 1;
}

/* Every completion waiting; receives posted again. */
static void drain(void)
{
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(id->recv_cq, 1, &wc)) > 0) {
		const uint8_t *p = bufs + wc.wr_id * MSG + GRH;

		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "umc-gapwatch: receive failed: %s\n",
				ibv_wc_status_str(wc.status));
			exit(1);
		}
		st.received++;
		if (wc.byte_len >= GRH + 8 && !memcmp(p, "UMCK", 4))
			seen((uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7]);
		post(wc.wr_id);
	}
	CHECK(n < 0);
}

static void parse(int argc, char **argv, int *idle_ms)
{
	static const struct option lopts[] = {
		{"idle", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct sockaddr_in src = {.sin_family = AF_INET};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "t:h", lopts, NULL)) != -1) {
		switch (c) {
		case 't':
			*idle_ms = (int)strtol(optarg, &end, 10) * 1000;
			if (*end || *idle_ms <= 0 || *idle_ms > 3600000) {
				fprintf(stderr, "umc-gapwatch: -t takes 1 to 3600 seconds\n");
				exit(2);
			}
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'V':
			printf("umc-gapwatch (umcast) %s\n", UMC_VERSION);
			exit(0);
		default:
			fputs(usage_text, stderr);
			exit(2);
		}
	}
	if (argc - optind != 2 || inet_pton(AF_INET, argv[optind], &src.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[optind + 1], &grp.sin_addr) != 1) {
		fputs(usage_text, stderr);
		exit(2);
	}
	struct rdma_event_channel *ch = rdma_create_event_channel();

	CHECK(!ch);
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&src));
}

int main(int argc, char **argv)
{
	int idle_ms = 5000;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &idle_ms);
	st.seen = calloc(SEEN, 1);
	CHECK(!st.seen);

	struct ibv_qp_init_attr qpa = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 1, .max_recv_wr = DEPTH, .max_send_sge = 1, .max_recv_sge = 1},
	};

	CHECK(rdma_create_qp(id, NULL, &qpa));
	bufs = malloc((size_t)DEPTH * MSG);
	CHECK(!bufs);
	mr = rdma_reg_msgs(id, bufs, (size_t)DEPTH * MSG);
	CHECK(!mr);
	for (uint64_t i = 0; i < DEPTH; i++)
		post(i);
	join("joined");

	/* Completions and CM events, whichever comes: both channels are fds. */
	struct pollfd fds[2] = {{.fd = id->recv_cq_channel->fd, .events = POLLIN},
				{.fd = id->channel->fd, .events = POLLIN}};

	CHECK(ibv_req_notify_cq(id->recv_cq, 0));
	for (;;) {
		int n = poll(fds, 2, idle_ms);

		CHECK(n < 0);
		if (n == 0)
			break; /* idle: the senders are done */
		if (fds[1].revents) {
			/* A port event ended the membership: leave, join again. */
			int status = cm_wait(RDMA_CM_EVENT_MULTICAST_ERROR);

			printf("multicast error: %s, rejoining\n", strerror(-status));
			CHECK(rdma_leave_multicast(id, (struct sockaddr *)&grp));
			/* The port may still be coming back: joins fail meanwhile. */
			while (rdma_join_multicast(id, (struct sockaddr *)&grp, NULL)) {
				CHECK(errno != EADDRNOTAVAIL && errno != ENODEV);
				poll(NULL, 0, 50);
			}
			CHECK(cm_wait(RDMA_CM_EVENT_MULTICAST_JOIN));
			printf("rejoined %s\n", inet_ntoa(grp.sin_addr));
		}
		if (fds[0].revents) {
			struct ibv_cq *cq;
			void *ctx;

			CHECK(ibv_get_cq_event(id->recv_cq_channel, &cq, &ctx));
			ibv_ack_cq_events(cq, 1);
			CHECK(ibv_req_notify_cq(cq, 0));
			drain();
		}
	}
	printf("received %ld, lost %ld, late %ld, again %ld\n", st.received, st.lost, st.late,
	       st.again);
	rdma_leave_multicast(id, (struct sockaddr *)&grp);
	rdma_destroy_qp(id);
	rdma_dereg_mr(mr);
	struct rdma_event_channel *ch = id->channel;

	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	free(bufs);
	free(st.seen);
	return 0;
}
