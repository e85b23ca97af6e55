// SPDX-License-Identifier: MIT
/*
 * test_verbs_selfblock.c - IBV_QP_CREATE_BLOCK_SELF_MCAST_LB must block
 * exactly the QP's own datagrams: no more, no less.
 *
 * docs/design.md, "Departures from Linux": the flag is honoured, as
 * ConnectX NICs do: the QP does not
 * receive the multicast datagrams it sent itself; every other sender's
 * datagrams are delivered as usual (rxe_rcv_mcast_pkt()).  umcast runs
 * one HCA per process, so two processes on one host are two HCAs: a QP of
 * another process is never "self".  QPNs are unique on the host, as on one
 * rxe device: two processes numbering their QPs from the same
 * UMC_QPN_BASE get different numbers, because a QP holds its number on
 * the host and another process skips it (link/roce/uc/qpn.c).
 *
 * The basic case (the sender's own QP blocked, another process's QP
 * receiving) is in test_verbs_delivery.c; these are the two edges:
 *   - own datagrams are blocked even when the QP's preferred UDP source
 *     port (0xC000 + hash(QPN)) is held by some other socket and the QP
 *     had to send from another port;
 *   - another process's datagrams are not blocked when it numbers its QPs
 *     from the same base (its first QP then gets the next QPN).
 */
#include <signal.h>
#include <sys/wait.h>

#include "verbs_util.h"

/* A QPN base of this process, away from rxe's 0x11 and from pid bases. */
static uint32_t qpn_base(void)
{
	return 0x800000u + ((uint32_t)getpid() & 0x7fff) * 0x10u;
}

/*
 * Own datagrams sent from a fallback source port: the library cannot bind
 * the QP's hash port (another socket holds it without SO_REUSEPORT, e.g.
 * an ephemeral port of an unrelated program: 0xC000-0xFFFF overlaps Linux's
 * ephemeral range) and sends from another port.  They are still the QP's
 * own and must be blocked.
 */
static void test_own_datagrams_blocked_when_port_taken(void **state)
{
	struct t_env e;
	unsigned long blocked0;
	struct t_qp blk, other;
	struct ibv_wc wc;
	int holder;

	t_env_open(&e, t_group_ip(1), true);
	blocked0 = T_CNT(e.dev, rx_self_blocked);
	t_qp_make(&blk, e.pd, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, T_QKEY);
	t_qp_make(&other, e.pd, 0, T_QKEY);
	/* Take the block QP's preferred port before its first send. */
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(umc_roce_sport(blk.qp->qp_num)),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};

	holder = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(holder >= 0);
	if (bind(holder, (struct sockaddr *)&sin, sizeof(sin))) {
		print_message("port %u busy already (%s): still taken\n", ntohs(sin.sin_port),
			      strerror(errno));
	}

	assert_int_equal(ibv_attach_mcast(blk.qp, &e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(e.dev, &e.mgid, +1), 0);
	assert_int_equal(t_post_recv(&blk, 0, 2048, 1), 0);
	assert_int_equal(t_post_recv(&blk, 2048, 2048, 2), 0);
	int sn = t_sniff_open(e.gip);
	uint8_t pkt[2048];

	/* Own datagram, then a marker from another QP. */
	assert_int_equal(t_send(&blk, e.ah, "own", 3, T_QKEY, false, 0, 0, 11), 0);
	t_wait_send(blk.cq, 11);
	assert_int_equal(t_send(&other, e.ah, "marker", 6, T_QKEY, false, 0, 0, 12), 0);
	t_wait_send(other.cq, 12);
	assert_true(t_sniff_recv(sn, pkt, sizeof(pkt), T_WAIT_MS) > 0); /* own went out */
	assert_true(t_sniff_recv(sn, pkt, sizeof(pkt), T_WAIT_MS) > 0); /* marker */

	assert_int_equal(t_wait_wc(blk.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* The first (and only) receive must be the marker, not its own "own". */
	assert_int_equal(wc.src_qp, other.qp->qp_num);
	assert_int_equal(wc.byte_len, 46);
	t_assert_cq_empty(blk.cq);
	assert_int_equal(T_CNT(e.dev, rx_self_blocked), blocked0 + 1);

	close(sn);
	close(holder);
	assert_int_equal(ibv_detach_mcast(blk.qp, &e.mgid, 0), 0);
	umc_dev_member(e.dev, &e.mgid, -1);
	t_qp_free(&blk);
	t_qp_free(&other);
	t_env_close(&e);
}

/* ------------------------------------------------------------------------- */
/* Two processes, same QPN base.                                             */

static const char *self_exe = "/proc/self/exe";

struct rep {
	int got;
	uint32_t qpn, src_qp, byte_len;
	unsigned long blocked;
};

/* Receiver: BLOCK_SELF QP attached; "R" when ready; report after one message. */
static int child_recv(uint32_t gip, int wfd)
{
	struct t_env e;
	struct rep r = {0};
	struct ibv_wc wc;
	struct t_qp q;

	t_env_open(&e, gip, false);
	t_qp_make(&q, e.pd, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, T_QKEY);
	r.qpn = q.qp->qp_num;
	assert_int_equal(t_post_recv(&q, 0, 2048, 1), 0);
	assert_int_equal(ibv_attach_mcast(q.qp, &e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(e.dev, &e.mgid, +1), 0);
	if (write(wfd, "R", 1) != 1)
		return 2;
	if (t_wait_wc(q.cq, &wc, T_WAIT_MS) == 1) {
		r.got = 1;
		r.src_qp = wc.src_qp;
		r.byte_len = wc.byte_len;
	}
	r.blocked = T_CNT(e.dev, rx_self_blocked);
	if (write(wfd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		return 2;
	ibv_detach_mcast(q.qp, &e.mgid, 0);
	umc_dev_member(e.dev, &e.mgid, -1);
	t_qp_free(&q);
	t_env_close(&e);
	return 0;
}

/* Sender: one ordinary QP, one 9-byte message; reports its QPN. */
static int child_send(uint32_t gip, int wfd)
{
	struct t_env e;
	struct t_qp q;
	uint32_t qpn;

	t_env_open(&e, gip, true);
	t_qp_make(&q, e.pd, 0, T_QKEY);
	qpn = q.qp->qp_num;
	assert_int_equal(t_send(&q, e.ah, "123456789", 9, T_QKEY, false, 0, 0, 1), 0);
	t_wait_send(q.cq, 1);
	if (write(wfd, &qpn, sizeof(qpn)) != (ssize_t)sizeof(qpn))
		return 2;
	t_qp_free(&q);
	t_env_close(&e);
	return 0;
}

static pid_t spawn(const char *role, uint32_t gip, uint32_t base, int *rfd)
{
	char a1[16], a2[16], env[32];
	int up[2];
	pid_t pid;

	assert_int_equal(pipe(up), 0);
	snprintf(a1, sizeof(a1), "%u", gip);
	snprintf(a2, sizeof(a2), "%d", up[1]);
	snprintf(env, sizeof(env), "0x%x", base);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(up[0]);
		setenv("UMC_QPN_BASE", env, 1);
		execl(self_exe, "test_verbs_selfblock", role, a1, a2, (char *)NULL);
		_exit(127);
	}
	close(up[1]);
	*rfd = up[0];
	return pid;
}

/*
 * Two processes numbering their QPs from the same UMC_QPN_BASE: the
 * receiver's BLOCK_SELF QP takes the base, the sender's QP the next number
 * (the base is the receiver's on this host).  The sender is another HCA:
 * its datagram must be delivered, not blocked.
 */
static void test_other_process_same_qpn_not_blocked(void **state)
{
	uint32_t gip = t_group_ip(2), base = qpn_base(), sqpn = 0;
	int rfd, sfd;
	struct rep r;
	char c = 0;
	pid_t rp = spawn("--recv", gip, base, &rfd), sp;

	assert_true(t_read_full(rfd, &c, 1, 10 * T_WAIT_MS));
	assert_int_equal(c, 'R');
	sp = spawn("--send", gip, base, &sfd);
	assert_true(t_read_full(sfd, &sqpn, sizeof(sqpn), 10 * T_WAIT_MS));
	assert_true(t_read_full(rfd, &r, sizeof(r), 10 * T_WAIT_MS));
	assert_int_equal(t_reap(sp, 10 * T_WAIT_MS), 0);
	assert_int_equal(t_reap(rp, 10 * T_WAIT_MS), 0);
	close(rfd);
	close(sfd);
	print_message("receiver QPN 0x%x, sender QPN 0x%x; received %d, rx_self_blocked %lu\n",
		      r.qpn, sqpn, r.got, r.blocked);
	assert_int_equal(r.qpn, base);
	assert_int_equal(sqpn, base + 1); /* host-wide unique QPNs */
	assert_int_equal(r.blocked, 0);	  /* not "self" */
	assert_int_equal(r.got, 1);	  /* delivered */
	assert_int_equal(r.src_qp, sqpn);
	assert_int_equal(r.byte_len, 49);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--recv") == 0)
		return child_recv((uint32_t)strtoul(argv[2], NULL, 10), atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "--send") == 0)
		return child_send((uint32_t)strtoul(argv[2], NULL, 10), atoi(argv[3]));

	/* This process's QPs: a known base, so the preferred port is known. */
	char env[32];

	snprintf(env, sizeof(env), "0x%x", qpn_base() + 8);
	setenv("UMC_QPN_BASE", env, 1);

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_datagrams_blocked_when_port_taken),
		cmocka_unit_test(test_other_process_same_qpn_not_blocked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
