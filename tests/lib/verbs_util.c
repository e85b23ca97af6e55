// SPDX-License-Identifier: MIT
/*
 * verbs_util.c - what the tests of the verbs and the CM share (verbs_util.h).
 */
#include "sm_proc.h"
#include "verbs_util.h"

uint32_t t_group_ip(unsigned n)
{
	unsigned pid = (unsigned)getpid();

	return 239u << 24 | ((pid >> 8) & 0xff) << 16 | (pid & 0xff) << 8 | (n & 0xff);
}

union ibv_gid t_gid_v4(uint32_t ip_host)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = (uint8_t)(ip_host >> 24);
	g.raw[13] = (uint8_t)(ip_host >> 16);
	g.raw[14] = (uint8_t)(ip_host >> 8);
	g.raw[15] = (uint8_t)ip_host;
	return g;
}

union ibv_gid t_group_gid(unsigned n)
{
	return t_gid_v4(t_group_ip(n));
}

struct ibv_context *t_open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

struct ibv_context *t_open_lo(void)
{
	struct ibv_context *ctx = t_open_dev("umc_lo");

	assert_non_null(ctx);
	return ctx;
}

struct ibv_qp *t_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t flags)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4},
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
		.comp_mask = IBV_QP_INIT_ATTR_PD | (flags ? IBV_QP_INIT_ATTR_CREATE_FLAGS : 0),
		.pd = pd,
		.create_flags = flags,
	};

	return ibv_create_qp_ex(pd->context, &a);
}

int t_qp_rts_pkey(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn, uint16_t pkey_index)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = pkey_index,
		.port_num = 1,
		.qkey = qkey,
	};
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);

	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int t_qp_rts(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn)
{
	return t_qp_rts_pkey(qp, qkey, sq_psn, 0);
}

void t_qp_make_ch(struct t_qp *t, struct ibv_pd *pd, uint32_t flags, uint32_t qkey,
		  struct ibv_comp_channel *ch)
{
	memset(t, 0, sizeof(*t));
	t->cq = ibv_create_cq(pd->context, 256, NULL, ch, 0);
	assert_non_null(t->cq);
	t->qp = t_create_qp(pd, t->cq, flags);
	assert_non_null(t->qp);
	assert_int_equal(t_qp_rts(t->qp, qkey, 0), 0);
	t->buf = calloc(1, T_BUF);
	assert_non_null(t->buf);
	t->mr = ibv_reg_mr(pd, t->buf, T_BUF, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(t->mr);
}

void t_qp_make(struct t_qp *t, struct ibv_pd *pd, uint32_t flags, uint32_t qkey)
{
	t_qp_make_ch(t, pd, flags, qkey, NULL);
}

void t_qp_free(struct t_qp *t)
{
	if (t->qp)
		assert_int_equal(ibv_destroy_qp(t->qp), 0);
	if (t->cq)
		assert_int_equal(ibv_destroy_cq(t->cq), 0);
	if (t->mr)
		assert_int_equal(ibv_dereg_mr(t->mr), 0);
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

struct ibv_ah *t_ipv4_ah_hops(struct ibv_pd *pd, uint32_t ip, uint8_t hops)
{
	struct ibv_ah_attr a = {
		.grh = {.dgid = t_gid_v4(ip), .sgid_index = 0, .hop_limit = hops},
		.is_global = 1,
		.port_num = 1,
	};

	return ibv_create_ah(pd, &a);
}

struct ibv_ah *t_ipv4_ah(struct ibv_pd *pd, uint32_t ip)
{
	return t_ipv4_ah_hops(pd, ip, 64);
}

void t_env_open(struct t_env *e, uint32_t gip, bool with_ah)
{
	memset(e, 0, sizeof(*e));
	e->ctx = t_open_lo();
	e->dev = ctx_dev(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	if (!gip)
		return;
	e->gip = gip;
	e->mgid = t_gid_v4(gip);
	if (with_ah)
		e->ah = t_ipv4_ah(e->pd, gip);
}

void t_env_close(struct t_env *e)
{
	if (e->ah)
		assert_int_equal(ibv_destroy_ah(e->ah), 0);
	assert_int_equal(ibv_dealloc_pd(e->pd), 0); /* EBUSY: an object of the PD left over */
	assert_int_equal(ibv_close_device(e->ctx), 0);
}

int t_post_recv(struct t_qp *t, size_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(t->buf + off), .length = len, .lkey = t->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;

	return ibv_post_recv(t->qp, &wr, &bad);
}

int t_send(struct t_qp *t, struct ibv_ah *ah, const void *data, uint32_t len, uint32_t qkey,
	   bool with_imm, uint32_t imm_be, int flags, uint64_t wr_id)
{
	uint8_t *src = t->buf + T_BUF / 2;
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = len, .lkey = t->mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = (unsigned)flags,
		.imm_data = imm_be,
		.wr.ud = {.ah = ah, .remote_qpn = 0xffffff, .remote_qkey = qkey},
	};
	struct ibv_send_wr *bad = NULL;

	assert_true(len <= T_BUF / 2);
	if (len)
		memcpy(src, data, len);
	return ibv_post_send(t->qp, &wr, &bad);
}

int t_fx_setup(void **state, uint32_t gip, bool with_buf)
{
	struct t_fx *f = calloc(1, sizeof(*f));

	t_env_open(&f->e, gip, gip != 0);
	f->cq = ibv_create_cq(f->e.ctx, 64, NULL, NULL, 0);
	f->qp = t_create_qp(f->e.pd, f->cq, 0);
	if (with_buf) {
		f->buf = calloc(1, 4096);
		f->mr = ibv_reg_mr(f->e.pd, f->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	}
	if (!f->e.pd || !f->cq || !f->qp || (gip && !f->e.ah) || (with_buf && (!f->buf || !f->mr)))
		return -1;
	*state = f;
	return 0;
}

int t_fx_teardown(void **state)
{
	struct t_fx *f = *state;

	ibv_destroy_qp(f->qp);
	ibv_destroy_cq(f->cq);
	if (f->mr)
		ibv_dereg_mr(f->mr);
	t_env_close(&f->e);
	free(f->buf);
	free(f);
	return 0;
}

void t_poll_rx(struct umc_device *dev, int ms)
{
	struct pollfd p[16];
	int n = 0;

	pthread_mutex_lock(&dev->watch_lock);
	for (int i = 0; i < dev->rx_nep && n < 16; i++)
		p[n++] = (struct pollfd){.fd = dev->rx_eps[i]->fd, .events = POLLIN};
	pthread_mutex_unlock(&dev->watch_lock);
	(void)poll(p, (nfds_t)n, ms);
}

int t_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	struct umc_device *dev = to_ucq(cq)->dev;
	uint64_t deadline = t_now_ms() + (uint64_t)ms;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		assert_true(n >= 0);
		if (n)
			return n;
		if (t_now_ms() > deadline)
			return 0;
		t_poll_rx(dev, 10);
	}
}

void t_wait_send(struct ibv_cq *cq, uint64_t wr_id)
{
	struct ibv_wc wc;

	assert_int_equal(t_wait_wc(cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(wc.wr_id, wr_id);
}

bool t_wait_counter(struct umc_device *dev, _Atomic uint64_t *c, unsigned long target, int ms)
{
	uint64_t deadline = t_now_ms() + (uint64_t)ms;

	for (;;) {
		umc_progress(dev, true);
		if (atomic_load(c) >= target)
			return true;
		if (t_now_ms() > deadline)
			return false;
		t_poll_rx(dev, 10);
	}
}

void t_assert_cq_empty(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	umc_progress(to_ucq(cq)->dev, true);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
}

unsigned long t_cnt(struct umc_device *dev, _Atomic uint64_t *c)
{
	umc_progress(dev, true);
	return atomic_load(c);
}

int t_sniff_open(uint32_t group_ip)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(T_PORT)};
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	sin.sin_addr.s_addr = htonl(group_ip);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

ssize_t t_sniff_recv(int fd, uint8_t *buf, size_t cap, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (poll(&p, 1, ms) != 1)
		return -1;
	return recv(fd, buf, cap, MSG_DONTWAIT);
}

/* The program's umc-sm and the process that started it: a forked case's child never stops it. */
struct t_sm {
	struct test_sm sm; /* sm.pid: 0 when not running */
	pid_t owner;
};

static struct t_sm *t_sm(void)
{
	static struct t_sm sm;

	return &sm;
}

bool t_sm_running(void)
{
	return t_sm()->sm.pid != 0;
}

/* umc-sm on an ephemeral port, which the library is pointed at (UMC_SM). */
static int t_sm_start(bool required)
{
	char addr[32];

	t_sm()->owner = getpid();
	if (!test_sm_start(&t_sm()->sm, 0, NULL)) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", t_sm()->sm.port);
		setenv("UMC_SM", addr, 1);
		return 0;
	}
	t_sm()->sm.pid = 0;
	fprintf(stderr, "%s: umc-sm did not start ($UMC_BIN)%s\n", program_invocation_short_name,
		required ? "" : ": its InfiniBand cases skipped");
	return required ? -1 : 0;
}

int t_sm_required(void **state)
{
	return t_sm_start(true);
}

int t_sm_optional(void **state)
{
	return t_sm_start(false);
}

int t_sm_stop(void **state)
{
	if (getpid() != t_sm()->owner)
		return 0;
	if (t_sm_running()) {
		test_sm_stop(&t_sm()->sm);
		test_sm_free(&t_sm()->sm);
	}
	return 0;
}

void t_child_case_run(void **state)
{
	const struct t_child_case *c = *state;
	pid_t pid;
	int status;

	if (c->needs && !c->needs())
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(T_CHILD_ALARM_S);
		c->body();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		fail_msg("the case's child hung (%d s): it waited for what never came, such as a "
			 "lock never released", T_CHILD_ALARM_S);
	if (WIFSIGNALED(status))
		fail_msg("the case's child died (signal %d)", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

bool t_ib_port_active(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	for (uint64_t end = t_now_ms() + T_WAIT_MS; t_now_ms() < end; poll(NULL, 0, 10))
		if (!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE)
			return true;
	return false;
}

union ibv_gid t_ib_mgid(uint8_t hi, uint8_t lo)
{
	union ibv_gid g = {.raw = {0xff, 0x12, 0x40, 0x1b}};

	g.raw[13] = hi;
	g.raw[15] = lo;
	return g;
}

uint16_t t_ipv4_csum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void t_fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}
