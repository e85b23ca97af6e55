// SPDX-License-Identifier: MIT
/*
 * sa-null - an SA that does nothing: the floor under umc-sm's join rate
 * (bench/sm-bench.sh measures it beside umc-sm and OpenSM).
 *
 *   sa-null --listen ADDR:PORT [--ready-fd FD]
 *
 * It answers umc-sm's protocol (src/wire/sm_proto.h) as cheaply as a
 * datagram can be answered: a REGISTER with a made-up port, a RENEW and an
 * UNREGISTER with OK, and an SA request with the request itself turned
 * into its response (GetResp, status 0, MLID 0xC000 + n in the record), so
 * that a client cannot tell it from an SA that created the group.  No
 * state, no rules, no checks beyond the decoder's.  Its loop is umc-sm's
 * without the work: poll(2) on the socket, recvmmsg(2) of up to BATCH
 * datagrams, one sendmmsg(2) of their answers.  What a join costs against
 * it is what the round trip of the same datagrams costs on this host: no
 * SA over this transport can be faster.
 *
 * It prints "sa-null: ready on ADDR:PORT" (also to --ready-fd) and runs
 * until SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sa/sa_addr.h"
#include "umc_param.h"
#include "wire/be.h"
#include "wire/ib_mad.h"
#include "wire/sm_proto.h"

enum {
	BATCH = 64, /* as umc-sm's */
	SOCKBUF = 16 << 20, /* as umc-sm's */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The answer to request @m into @out; its length, 0 for none. */
static size_t answer(const struct umc_sm_msg *m, uint8_t *out, uint32_t n)
{
	struct umc_sm_msg r = { .hdr = m->hdr };
	uint8_t mad[UMC_MAD_SIZE];
	struct umc_sa_mad_wire *sa = (struct umc_sa_mad_wire *)mad;
	struct umc_mcmember_wire *rec = (struct umc_mcmember_wire *)sa->data;

	r.hdr.type |= UMC_SM_TYPE_REPLY;
	r.hdr.status = UMC_SM_OK;
	switch (m->hdr.type) {
	case UMC_SM_REGISTER:
		r.hdr.epoch = 1;
		r.hdr.lid = (uint16_t)(1 + n % UMC_SM_MAX_UCAST_LID);
		r.port = (struct umc_sm_port_info){
			.port_guid = UMC_SM_GUID_BASE + n, .subnet_prefix = UMC_SM_SUBNET_PREFIX,
			.lid = r.hdr.lid, .sm_lid = 1, .active_mtu = 4, .max_mtu = 5,
			.active_width = 2, .active_speed = 1, .rate = 3, .pkey_count = 1,
			.pkeys = { 0xffff }, .lease_ms = 10000, .mcast_base = UMC_SM_MCAST_BASE,
			.mlid_base = 0xC000, .mlid_max = 0xFFFE, .data_port = 4796,
		};
		break;
	case UMC_SM_RENEW:
		r.lease_ms = 10000;
		break;
	case UMC_SM_UNREGISTER:
		break;
	case UMC_SM_SA:
		memcpy(mad, m->mad, UMC_MAD_SIZE);
		sa->method = UMC_MAD_METHOD_GET_RESP;
		put_be16(sa->status, 0);
		put_be16(rec->mlid, (uint16_t)(0xC000 + n % 0x3FFF));
		r.mad = mad;
		break;
	default:
		return 0;
	}
	return umc_sm_msg_encode(out, &r);
}

/* Until SIGTERM or SIGINT, which only interrupt the wait (@wait_mask lets them in). */
static void serve(int fd, const sigset_t *wait_mask)
{
	static uint8_t rx[BATCH][UMC_SM_MAX_MSG + 1], tx[BATCH][UMC_SM_MAX_MSG];
	struct mmsghdr rmsg[BATCH], tmsg[BATCH];
	struct iovec riov[BATCH], tiov[BATCH];
	struct sockaddr_in src[BATCH];
	uint32_t answered = 0;
	int i, n, k;

	while (!stop) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (ppoll(&pfd, 1, NULL, wait_mask) < 0)
			continue; /* EINTR: look at stop */
		memset(rmsg, 0, sizeof(rmsg));
		for (i = 0; i < BATCH; i++) {
			riov[i] = (struct iovec){ rx[i], sizeof(rx[i]) };
			rmsg[i].msg_hdr.msg_name = &src[i];
			rmsg[i].msg_hdr.msg_namelen = sizeof(src[i]);
			rmsg[i].msg_hdr.msg_iov = &riov[i];
			rmsg[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(fd, rmsg, BATCH, MSG_DONTWAIT, NULL);
		for (i = 0, k = 0; i < n; i++) {
			struct umc_sm_msg m;
			size_t len;

			if (umc_sm_msg_decode(rx[i], rmsg[i].msg_len, &m) ||
			    !(len = answer(&m, tx[k], answered++)))
				continue;
			tiov[k] = (struct iovec){ tx[k], len };
			memset(&tmsg[k], 0, sizeof(tmsg[k]));
			tmsg[k].msg_hdr.msg_name = &src[i];
			tmsg[k].msg_hdr.msg_namelen = sizeof(src[i]);
			tmsg[k].msg_hdr.msg_iov = &tiov[k];
			tmsg[k].msg_hdr.msg_iovlen = 1;
			k++;
		}
		for (i = 0; i < k;) {
			n = sendmmsg(fd, tmsg + i, (unsigned)(k - i), 0);
			if (n > 0)
				i += n;
			else if (n == 0 || errno != EINTR)
				i++; /* as umc-sm's tx_flush(): what the kernel refuses is skipped */
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "listen", required_argument, NULL, 'l' },
					      { "ready-fd", required_argument, NULL, 'r' },
					      { NULL, 0, NULL, 0 } };
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, wait_mask;
	struct sockaddr_in addr;
	socklen_t alen = sizeof(addr);
	const char *listen_on = NULL;
	char line[96], text[INET_ADDRSTRLEN];
	int fd, opt, ready = -1, sz = SOCKBUF, len;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 'l')
			listen_on = optarg;
		else if (opt == 'r')
			ready = atoi(optarg);
		else
			return 2;
	}
	if (!listen_on || umc_sa_parse_endpoint(listen_on, UMC_SM_UDP_PORT, &addr)) {
		fputs("usage: sa-null --listen ADDR:PORT [--ready-fd FD]\n", stderr);
		return 2;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &wait_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    getsockname(fd, (struct sockaddr *)&addr, &alen)) {
		perror("sa-null: bind");
		return 1;
	}
	inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
	len = snprintf(line, sizeof(line), "sa-null: ready on %s:%u\n", text, ntohs(addr.sin_port));
	fputs(line, stdout);
	fflush(stdout);
	if (ready >= 0) {
		if (write(ready, line, (size_t)len) != len)
			perror("sa-null: --ready-fd");
		close(ready);
	}
	serve(fd, &wait_mask);
	close(fd);
	return 0;
}
