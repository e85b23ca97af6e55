// SPDX-License-Identifier: MIT
/*
 * sa_xport_umad.c - SA MADs through libibumad, for OpenSM on an ibsim
 * fabric: the process runs under umad2sim (LD_PRELOAD) and is the
 * simulated node named by SIM_HOST.
 *
 * umad2sim attaches a whole process to one node, chosen by SIM_HOST when
 * the process first touches the umad device.  A sequence that speaks for
 * several nodes therefore runs one agent per node: this program executed
 * again as "sa_client --agent NODE" with SIM_HOST=NODE and the umad2sim
 * library (SA_DIFF_UMAD2SIM) preloaded, driven over a pipe pair with
 * fixed-size messages.  The driving process itself never touches umad.
 *
 * umad2sim rewrites bits 32..47 of a request's TransactionID with its
 * agent number, and OpenSM's replies came back with bits 48..63 clear, so
 * replies are matched on the low 32 bits (sa_next_tid keeps them unique).
 *
 * umad2sim 0.10 delivers only the first 224 bytes of a received MAD: its
 * receive buffer is a struct sim_request (288 bytes) but it reports
 * umad_size() + 256, and copies that much out of the buffer.  So replies
 * are read with a 224-byte MAD length, which reads nothing past its buffer,
 * and bytes 224..255 are zeroed.  For a reply that holds the first 200
 * data bytes of a GetTable, that is records 1..3 of 56 bytes each, and
 * nothing of a fourth.  umad2sim complains about the short read on
 * stderr ("ERR: received data size ..."); that line is filtered out.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "sa_client.h"

static const uint64_t tid_match_mask = 0xffffffffULL;

enum { UMAD2SIM_MAD_BYTES = 224 };

/* One message of the agent pipe, both ways. */
struct agent_msg {
	int32_t rc;
	int32_t timeout_ms;
	uint16_t lid, sm_lid;
	uint64_t prefix, guid;
	uint8_t mad[SA_MAD_SIZE];
};

struct umad_node {
	int portid;
	int agent;
	uint8_t sm_sl;
	void *umad; /* umad_size() + 256 */
};

struct agent_node {
	pid_t pid;
	int to, from; /* pipe ends */
};

/* ---- in process ---------------------------------------------------------- */

static const char umad2sim_short_read[] = "ERR: received data size";

/* Copy lines from the pipe @arg to the real stderr, but umad2sim's complaint. */
static void *stderr_filter(void *arg)
{
	int *fds = arg; /* [0]: pipe read end, [1]: the real stderr */
	char line[1024];
	FILE *in = fdopen(fds[0], "r");

	while (in && fgets(line, sizeof(line), in))
		if (strncmp(line, umad2sim_short_read, sizeof(umad2sim_short_read) - 1))
			sa_write_all(fds[1], line, strlen(line));
	return NULL;
}

static int filter_fds[2];
static pthread_t filter_thread;

/* At exit: the real stderr back (the pipe's end closes), the rest copied. */
static void filter_stop(void)
{
	fflush(stderr);
	dup2(filter_fds[1], 2);
	pthread_join(filter_thread, NULL);
}

/* Route stderr through stderr_filter, once per process (best effort). */
static void filter_stderr(void)
{
	static bool done;
	int p[2];

	if (done || pipe(p))
		return;
	done = true;
	filter_fds[0] = p[0];
	filter_fds[1] = dup(2);
	if (filter_fds[1] < 0 || dup2(p[1], 2) < 0 ||
	    pthread_create(&filter_thread, NULL, stderr_filter, filter_fds)) {
		if (filter_fds[1] >= 0)
			dup2(filter_fds[1], 2);
		close(p[0]);
		close(p[1]);
		return;
	}
	close(p[1]);
	setvbuf(stderr, NULL, _IOLBF, 0);
	atexit(filter_stop);
}

static int umad_node_open(struct sa_node *n)
{
	struct umad_node *u = calloc(1, sizeof(*u));
	umad_port_t port;
	int rc;

	if (!u)
		return -ENOMEM;
	filter_stderr();
	if (umad_init() < 0) {
		free(u);
		return -ENODEV;
	}
	u->portid = umad_open_port(NULL, 0);
	if (u->portid < 0) {
		rc = u->portid;
		free(u);
		return rc;
	}
	rc = umad_get_port(NULL, 0, &port);
	if (rc < 0) {
		umad_close_port(u->portid);
		free(u);
		return rc;
	}
	n->lid = (uint16_t)port.base_lid;
	n->sm_lid = (uint16_t)port.sm_lid;
	n->prefix = be64toh(port.gid_prefix);
	n->guid = be64toh(port.port_guid);
	u->sm_sl = (uint8_t)port.sm_sl;
	umad_release_port(&port);
	u->agent = umad_register(u->portid, SA_MGMT_CLASS, SA_CLASS_VERSION, 0, NULL);
	u->umad = umad_alloc(1, umad_size() + SA_MAD_SIZE);
	if (u->agent < 0 || !u->umad || !n->sm_lid) {
		rc = u->agent < 0 ? u->agent : !u->umad ? -ENOMEM : -EHOSTUNREACH;
		umad_free(u->umad);
		umad_close_port(u->portid);
		free(u);
		return rc;
	}
	n->priv = u;
	return 0;
}

static int umad_node_xact(struct sa_node *n, const uint8_t *req, uint8_t *rep, int timeout_ms)
{
	struct umad_node *u = n->priv;
	uint8_t *mad = umad_get_mad(u->umad);
	int64_t deadline = sa_now_ms() + timeout_ms;
	uint64_t tid;
	int len;

	memcpy(&tid, req + 8, 8);
	tid = be64toh(tid);
	memcpy(mad, req, SA_MAD_SIZE);
	umad_set_addr(u->umad, n->sm_lid, 1, u->sm_sl, SA_GSI_QKEY);
	if (umad_send(u->portid, u->agent, u->umad, SA_MAD_SIZE, 0, 0) < 0)
		return -EIO;
	for (;;) {
		int64_t left = deadline - sa_now_ms();
		uint64_t got;

		if (left <= 0)
			return -ETIMEDOUT;
		len = UMAD2SIM_MAD_BYTES;
		if (umad_recv(u->portid, u->umad, &len, (int)left) < 0)
			continue; /* timed out (checked above) or a short read */
		memset(mad + UMAD2SIM_MAD_BYTES, 0, SA_MAD_SIZE - UMAD2SIM_MAD_BYTES);
		memcpy(&got, mad + 8, 8);
		got = be64toh(got);
		if (!(mad[3] & 0x80) || ((got ^ tid) & tid_match_mask))
			continue; /* not our reply: a late one, or a request */
		memcpy(rep, mad, SA_MAD_SIZE);
		return 0;
	}
}

static void umad_node_close(struct sa_node *n)
{
	struct umad_node *u = n->priv;

	if (!u)
		return;
	umad_unregister(u->portid, u->agent);
	umad_free(u->umad);
	umad_close_port(u->portid);
	free(u);
	n->priv = NULL;
}

/* ---- agents -------------------------------------------------------------- */

/* Extra time the driver allows an agent beyond the MAD timeout. */
enum { AGENT_SLACK_MS = 10000 };

static int agent_open(struct sa_xport *x, struct sa_node *n)
{
	char *args[] = { "--agent", n->name, NULL };
	struct agent_node *a = calloc(1, sizeof(*a));
	struct agent_msg m;
	int rc;

	if (!a)
		return -ENOMEM;
	a->pid = sa_spawn(x, n->name, args, &a->to, &a->from);
	if (a->pid < 0) {
		rc = a->pid;
		free(a);
		return rc;
	}
	n->priv = a; /* from here on, close() reaps it */
	rc = sa_read_all(a->from, &m, sizeof(m), AGENT_SLACK_MS);
	if (!rc && m.rc)
		rc = m.rc;
	if (rc)
		return rc;
	n->lid = m.lid;
	n->sm_lid = m.sm_lid;
	n->prefix = m.prefix;
	n->guid = m.guid;
	return 0;
}

static int agent_xact(struct sa_xport *x, struct sa_node *n, const uint8_t *req, uint8_t *rep,
		      int timeout_ms)
{
	struct agent_node *a = n->priv;
	struct agent_msg m = { .timeout_ms = timeout_ms };
	int rc;

	memcpy(m.mad, req, SA_MAD_SIZE);
	rc = sa_write_all(a->to, &m, sizeof(m));
	if (!rc)
		rc = sa_read_all(a->from, &m, sizeof(m), timeout_ms + AGENT_SLACK_MS);
	if (rc)
		return rc;
	if (!m.rc)
		memcpy(rep, m.mad, SA_MAD_SIZE);
	return m.rc;
}

static void agent_close(struct sa_xport *x, struct sa_node *n)
{
	struct agent_node *a = n->priv;

	if (!a)
		return;
	close(a->to); /* EOF: the agent exits */
	close(a->from);
	sa_reap(a->pid, AGENT_SLACK_MS);
	free(a);
	n->priv = NULL;
}

/**
 * sa_umad_agent_main - serve node @node for a driving sa_client: open the
 * port, send a hello with its LID, SM LID, prefix and GUID, then run one
 * transaction per message until stdin closes.
 * @node: the ibsim node, which SIM_HOST also names
 *
 * Context: runs under umad2sim (LD_PRELOAD), as its process's only node.
 *
 * Returns: the exit status (0; 1 if the port cannot be opened).
 */
int sa_umad_agent_main(const char *node)
{
	struct sa_node n = { 0 };
	struct agent_msg m = { 0 };

	snprintf(n.name, sizeof(n.name), "%s", node);
	m.rc = umad_node_open(&n);
	m.lid = n.lid;
	m.sm_lid = n.sm_lid;
	m.prefix = n.prefix;
	m.guid = n.guid;
	if (sa_write_all(1, &m, sizeof(m)) || m.rc)
		return 1;
	while (!sa_read_all(0, &m, sizeof(m), -1)) {
		uint8_t rep[SA_MAD_SIZE];

		m.rc = umad_node_xact(&n, m.mad, rep, m.timeout_ms);
		if (!m.rc)
			memcpy(m.mad, rep, SA_MAD_SIZE);
		if (sa_write_all(1, &m, sizeof(m)))
			break;
	}
	umad_node_close(&n);
	return 0;
}

/* ---- the transport ------------------------------------------------------- */

static int x_open(struct sa_xport *x, struct sa_node *n)
{
	return x->agent_mode ? agent_open(x, n) : umad_node_open(n);
}

static int x_xact(struct sa_xport *x, struct sa_node *n, const uint8_t *req, uint8_t *rep,
		  int timeout_ms)
{
	return x->agent_mode ? agent_xact(x, n, req, rep, timeout_ms)
			     : umad_node_xact(n, req, rep, timeout_ms);
}

static void x_close(struct sa_xport *x, struct sa_node *n)
{
	if (x->agent_mode)
		agent_close(x, n);
	else
		umad_node_close(n);
}

const struct sa_xport_ops sa_xport_umad = {
	.name = "opensm",
	.open = x_open,
	.xact = x_xact,
	.close = x_close,
};
