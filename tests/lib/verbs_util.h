/* SPDX-License-Identifier: MIT */
/*
 * verbs_util.h - what the tests of the verbs and the CM (tests/unit) share:
 * devices, QPs, groups, bounded waits on completions and counters, umc-sm
 * as a cmocka group fixture, cases run in a child (verbs_util.c).  It also
 * includes the headers such a test needs, cmocka's among them.
 *
 * Rules these helpers keep:
 *   - on RoCEv2 only the loopback device "umc_lo" is used, and only
 *     groups in 239.0.0.0/8; a test of the InfiniBand link ("umc_ib0")
 *     starts a umc-sm of its own (t_sm_required, t_sm_optional), so its
 *     subnet is private;
 *   - groups are 239.P1.P2.N with P1.P2 = this process's pid, so that two
 *     runs of the suite (plain and sanitizer builds) or two test programs
 *     running in parallel never share a group; N is chosen per test;
 *   - every wait is bounded (wait.h): poll(2) with a timeout inside a loop
 *     with a deadline, never sleep().
 *
 * Datagrams wait in the group sockets until a progress point (ibv_poll_cq
 * on an empty CQ, ibv_get_cq_event, attach/detach) or the library's
 * background receive thread reads them.  t_wait_wc()/t_wait_counter() drive
 * progress themselves and block in poll(2) on the device's receive epoll
 * fd in between, so the tests hold with or without that thread
 * (UMC_RX_THREAD=0).
 *
 * "Nothing arrived" is never concluded from a timeout alone: a test sends a
 * marker datagram after the one that must be dropped and waits for the
 * marker; datagrams of one group reach a process through one socket, in
 * order, so once the marker is delivered the earlier datagram has been
 * processed too.
 */
#ifndef TESTS_LIB_VERBS_UTIL_H
#define TESTS_LIB_VERBS_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "verbs/verbs_int.h"
#include "wait.h"

enum {
	T_QKEY = 0x01234567, /* RDMA_UDP_QKEY */
	T_WAIT_MS = 3000,    /* upper bound of every positive wait */
	T_BUF = 16384,	     /* bytes per registered buffer */
	T_PORT = 4791,
};

/* The IPv4 group 239.P1.P2.@n of this process, host order. */
uint32_t t_group_ip(unsigned n);

/* IPv4 address @ip_host (host order) as a GID, ::ffff:a.b.c.d. */
union ibv_gid t_gid_v4(uint32_t ip_host);

/* t_gid_v4(t_group_ip(@n)). */
union ibv_gid t_group_gid(unsigned n);

/* ------------------------------------------------------------------------- */
/* Device, PD, buffers.                                                      */

/* The device named @name, opened; NULL when there is none. */
struct ibv_context *t_open_dev(const char *name);

/* umc_lo, opened; the case fails without it. */
struct ibv_context *t_open_lo(void);

/* One CQ + one UD QP + one registered buffer. */
struct t_qp {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* A UD QP on @cq (64 WRs and 4 SGEs each way, every send signalled); @flags: IBV_QP_CREATE_*. */
struct ibv_qp *t_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t flags);

/* RESET -> INIT -> RTR -> RTS with the minimal UD masks (IBA 10.3.1), on P_Key slot @pkey_index. */
int t_qp_rts_pkey(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn, uint16_t pkey_index);

/* t_qp_rts_pkey() on slot 0, the default P_Key's. */
int t_qp_rts(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn);

/* A QP in RTS with Q_Key @qkey on a CQ of its own, on completion channel @ch if not NULL. */
void t_qp_make_ch(struct t_qp *t, struct ibv_pd *pd, uint32_t flags, uint32_t qkey,
		  struct ibv_comp_channel *ch);

void t_qp_make(struct t_qp *t, struct ibv_pd *pd, uint32_t flags, uint32_t qkey);

/* Destroy what t_qp_make() made, each step asserted. */
void t_qp_free(struct t_qp *t);

/* An AH to IPv4 address @ip (host order; a group or a host) from GID 0, hop limit @hops. */
struct ibv_ah *t_ipv4_ah_hops(struct ibv_pd *pd, uint32_t ip, uint8_t hops);

/* t_ipv4_ah_hops with hop limit 64, as the CM builds a group's AH. */
struct ibv_ah *t_ipv4_ah(struct ibv_pd *pd, uint32_t ip);

/*
 * A test's environment: the loopback device, a PD and, when @gip is not 0,
 * that IPv4 group (host order) and, with @with_ah, an AH to it.
 */
struct t_env {
	struct ibv_context *ctx;
	struct umc_device *dev;
	struct ibv_pd *pd;
	uint32_t gip;	    /* group, host order (0: none) */
	union ibv_gid mgid; /* its GID */
	struct ibv_ah *ah;  /* to it, or NULL */
};

void t_env_open(struct t_env *e, uint32_t gip, bool with_ah);
void t_env_close(struct t_env *e);

/* Post one receive of @len bytes at offset @off of the QP's buffer. */
int t_post_recv(struct t_qp *t, size_t off, uint32_t len, uint64_t wr_id);

/*
 * Send @len bytes of @data (copied to the end half of the QP's buffer) to
 * @ah with Q_Key @qkey.  @imm_be: with_imm selects SEND_WITH_IMM.
 */
int t_send(struct t_qp *t, struct ibv_ah *ah, const void *data, uint32_t len, uint32_t qkey,
	   bool with_imm, uint32_t imm_be, int flags, uint64_t wr_id);

/*
 * A cmocka fixture (*state): the environment (group @gip, AH to it if not
 * 0), a CQ of 64 and a UD QP in RESET on it and, @with_buf, a registered
 * 4096-byte buffer.  t_fx_setup() fails (-1) if any of them is missing.
 */
struct t_fx {
	struct t_env e;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr; /* with_buf */
	uint8_t *buf;
};

int t_fx_setup(void **state, uint32_t gip, bool with_buf);
int t_fx_teardown(void **state);

/* ------------------------------------------------------------------------- */
/* Bounded waits.                                                            */

/*
 * Sleep up to @ms until a receive endpoint of @dev is readable.  Their own
 * fds: rx_epfd holds them only while the background thread sleeps on it.
 */
void t_poll_rx(struct umc_device *dev, int ms);

/* Wait up to @ms for one completion on @cq.  Returns 1 or 0 (timeout). */
int t_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms);

/* Wait until the send completion of @wr_id is on @cq (sq_sig_all QPs). */
void t_wait_send(struct ibv_cq *cq, uint64_t wr_id);

/* Drive progress until *@c >= @target; returns true if it got there in @ms. */
bool t_wait_counter(struct umc_device *dev, _Atomic uint64_t *c, unsigned long target, int ms);

/* No completion is waiting on @cq (after progress). */
void t_assert_cq_empty(struct ibv_cq *cq);

/*
 * A counter, read once no receive pass is running: the library's
 * background receive thread may be between delivering a completion and
 * counting it; umc_progress(dev, true) takes the engine's lock, so any such
 * pass has finished when it returns.
 */
unsigned long t_cnt(struct umc_device *dev, _Atomic uint64_t *c);

#define T_CNT(dev, name) t_cnt((dev), &(dev)->cnt->name)

/* ------------------------------------------------------------------------- */
/* A plain UDP socket that sees the group's datagrams as they are on the     */
/* wire (the host must be a member: umc_dev_member).                          */

/* A non-blocking socket bound to @group_ip (host order), port 4791. */
int t_sniff_open(uint32_t group_ip);

/* Next datagram on @fd within @ms: its length, or -1. */
ssize_t t_sniff_recv(int fd, uint8_t *buf, size_t cap, int ms);

/*
 * A test program's own umc-sm, as cmocka group fixtures: t_sm_required or
 * t_sm_optional as the group setup starts it before the first case (so
 * before any device opens), t_sm_stop as the group teardown stops it.
 * Where it does not start, t_sm_required fails the group; t_sm_optional
 * says so and runs it, and the cases that need it skip (t_sm_running).
 */
bool t_sm_running(void);
int t_sm_required(void **state);
int t_sm_optional(void **state);
int t_sm_stop(void **state);

/*
 * A case whose body runs in a child of fork, so that it probes the
 * devices afresh, bounded by T_CHILD_ALARM_S of alarm(2); the body
 * _exit()s non-zero to fail.  A cmocka assertion in the child fails the
 * case too, if less tidily: the child's copy of the runner goes on with
 * the later cases and exits non-zero (or meets its alarm), and its group
 * teardown leaves umc-sm alone.  @needs: NULL, or what
 * the case needs (t_sm_running: umc-sm), without which it skips.
 * T_CHILD_CASE(name, needs) runs body_<name>.
 */
#define T_CHILD_ALARM_S 20

struct t_child_case {
	void (*body)(void);
	bool (*needs)(void);
};

void t_child_case_run(void **state);

#define T_CHILD_CASE(name, needs)                                                                  \
	{                                                                                          \
#name, t_child_case_run, NULL, NULL, &(struct t_child_case) { body_##name, needs } \
	}

/* Wait (bounded) until umc_ib0's port @ctx is ACTIVE: umc-sm registered it. */
bool t_ib_port_active(struct ibv_context *ctx);

/* A test group's MGID on umc_ib0: ff12:401b::@hi:@lo (IPv4-style, link-local scope). */
union ibv_gid t_ib_mgid(uint8_t hi, uint8_t lo);

/* RFC 1071 over an IPv4 header including its checksum: 0 when valid. */
uint16_t t_ipv4_csum(const uint8_t *h);

/* @n bytes of a pattern of its own for each @seed. */
void t_fill(uint8_t *p, size_t n, unsigned seed);

#endif /* TESTS_LIB_VERBS_UTIL_H */
