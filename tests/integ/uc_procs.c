// SPDX-License-Identifier: MIT
/*
 * uc_procs - UD unicast between umcast processes (IBA 10.2.4, 11.4.1.2;
 * link/roce/uc/), through the verbs API only: ibv_create_ah to a peer's
 * GID and QPN, replies built with ibv_create_ah_from_wc and
 * ibv_init_ah_from_wc from the request's GRH and completion.
 *
 *   uc_procs pingpong   four processes A B C D on 127.0.0.1, two QPs each;
 *                       B<->C and D<->A ping-pong at the same time (each
 *                       reply built from the request's completion): every
 *                       message reaches the QP it was sent to and no other;
 *                       A, started first, is the host's demultiplexer and
 *                       passes every datagram on; nothing is dropped.
 *                       (UC_PROCS_ODD_UID=uid: B and D run as that user, are
 *                       given no socket to be steered to, and A passes
 *                       their datagrams on.)
 *   uc_procs pingpong6  the same between processes on ::1 (IPv6 GRH).
 *   uc_procs qkey       Q_Key violations are counted (rx_qkey_viol) and not
 *                       delivered; a Q_Key with the high bit set in the WR
 *                       sends the QP's own Q_Key (IBA 10.2.4), delivered.
 *   uc_procs noqp       a DestQP nobody on the host owns is counted rx_no_qp
 *                       by the demultiplexer and dropped; DestQP 0xFFFFFF to
 *                       a unicast address is counted rx_no_group.
 *   uc_procs kill       SIGKILL of a process: its QPNs stop receiving, the
 *                       others keep receiving; SIGKILL of the demultiplexer
 *                       in the middle of a ping-pong: the ping-pong
 *                       completes (steered: without a loss; passed on:
 *                       retransmitting what the hand-over lost), a survivor
 *                       takes over, a new process receives.
 *   uc_procs conflict   two processes numbering QPs from UMC_QPN_BASE=0x11
 *                       get distinct QPNs (0x11 0x12, then 0x13 0x14), as
 *                       on one rxe device, and talk to each other.
 *   uc_procs stopped    A (UMC_QPN_BASE=0x11) is stopped (SIGSTOP) while
 *                       the demultiplexer D dies, so A cannot register
 *                       again; B, numbering from 0x11 too, becomes the new
 *                       demultiplexer, which has never heard of A's QPNs:
 *                       B still gets 0x13 0x14.  A, continued, registers
 *                       again without a refusal, and A and B talk.
 *   uc_procs adopt      the demultiplexer A dies and B takes its group over
 *                       while C, stopped, cannot come back for its socket;
 *                       meanwhile a local process (this one, through raw
 *                       connections) registers again and again saying it
 *                       holds A's socket and drops each time: it gets that
 *                       index back once, and after its first drop the index
 *                       is a spare like any other.  When the takeover ends
 *                       (C's socket drained: what was steered there counts
 *                       rx_no_qp), three newcomers get three distinct
 *                       sockets (the two spares, then a new one): no index
 *                       is ever spare twice or had by two owners.
 *   uc_procs claim      A, stopped, cannot register again when its
 *                       demultiplexer D dies; at B, the new one, a local
 *                       process claims A's q0 without the socket that holds
 *                       it (no descriptor, another QPN's socket, a pipe, a
 *                       socket bound to the name in another network
 *                       namespace): each refused, -EPERM, and counted
 *                       (uc_claim_refused); its own QPN with its socket is
 *                       accepted.  A, continued, registers again without a
 *                       refusal and gets its unicast, the claimant none.
 *   uc_procs squat      a process of another user (root drops a child to
 *                       nobody) holds the name of 127.0.0.1's demultiplexer
 *                       first: A's QPs are made, but A sends it nothing and
 *                       counts it (uc_demux_untrusted); once it is gone, A
 *                       is the demultiplexer and gets B's unicast.  With
 *                       UMC_TRUST_UIDS naming that user, A registers with
 *                       it instead.  77 without root.
 *   uc_procs foreign    a process of another user (root drops a child to
 *                       nobody) registers with the demultiplexer through a
 *                       raw connection: it is given no socket of
 *                       addr:4791's reuseport group (with one it could read
 *                       the others' datagrams or steer them away), and the
 *                       QPN it claims is still served, passed on through
 *                       its input; its connections beyond
 *                       UMC_UC_USER_CONNS are closed at once and counted
 *                       (uc_conn_refused), and a newcomer still registers
 *                       and receives.  77 without root.
 *   uc_procs netns NSA NSB ADDRA ADDRB
 *                       two processes in each of two network namespaces
 *                       (hosts) joined by a link: ping-pong across hosts,
 *                       each host's demultiplexer passing on its share.
 *   uc_procs rxe NSHOST NSRXE ADDRHOST ADDRRXE PCAP
 *                       real rxe packets (PCAP, rxe-mckey-ipv4.pcap: rxe's
 *                       QPN 0x11, Q_Key 0x01234567, rxe's non-zero IPv4 IDs)
 *                       replayed from the "rxe host" through a raw socket
 *                       to a unicast QP (DestQP and destination rewritten,
 *                       IP checksum and ICRC recomputed): delivered with the
 *                       replayed IPv4 header in GRH bytes 20-39 (ID solved
 *                       from the ICRC); the QP's replies, built from those
 *                       completions, are what rxe accepts (ICRC over ID 0,
 *                       DF; DestQP 0x11; rxe's source port convention).
 *
 * The one-host scenarios run in a network namespace of their own (the
 * demultiplexer is per namespace, and every umcast process there takes
 * part).  UC_PROCS_UID=uid runs every agent as that user.
 *
 * The agents (uc_agent.c) run through agent.h; this file holds main() and
 * the orchestrator's checks, and uc_procs.h says where each scenario is.
 * Exit status 0 when every check passed.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isolate.h"
#include "uc_procs.h"

/*
 * By default the demultiplexer steers each datagram straight to its
 * owner's socket; UMC_UC_STEER=0 makes it pass every one on itself.
 */
bool steering(void)
{
	const char *e = getenv("UMC_UC_STEER");

	return !e || *e != '0';
}

bool start(struct peer *p, int id, const char *addr, const char *netns, const char *qpnbase,
	   uint32_t qkey)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%c", 'A' + id);
	p->arg = (struct agent_arg){id, addr, netns, qpnbase, qkey ? qkey : QKEY};
	agent_spawn(&p->ag, p->name, uc_agent_main, &p->arg);
	if (!agent_ready(&p->ag))
		return false;
	p->q[0] = (uint32_t)agent_field(&p->ag, "q0");
	p->q[1] = (uint32_t)agent_field(&p->ag, "q1");
	p->pid = (pid_t)agent_field(&p->ag, "pid");
	return true;
}

/* Counter @key of @p now. */
unsigned long counter(struct peer *p, const char *key)
{
	return agent_cmd(&p->ag, "counters") ? agent_field(&p->ag, key) : (unsigned long)-2;
}

/*
 * @p's counter @key is @want: exactly, once it stops moving.  A counter may
 * trail what it counts by a moment (uc_forwarded moves when the
 * forwarding thread's sendmmsg has returned, after the owner may have
 * read the datagram), so a lower value is read again, for a bounded time.
 */
void expect_counter(struct peer *p, const char *key, unsigned long want)
{
	uint64_t end = t_now_ms() + 2000;
	unsigned long got;
	char what[64];

	while ((got = counter(p, key)) < want && t_now_ms() < end)
		poll(NULL, 0, 20);
	snprintf(what, sizeof(what), "%s %s", p->name, key);
	agent_expect_eq(what, got, want);
}

void expect_clean(struct peer *p)
{
	if (!agent_cmd(&p->ag, "counters"))
		return;
	agent_expect_eq(p->name, agent_field(&p->ag, "bad"), 0);
	agent_expect_eq(p->name, agent_field(&p->ag, "uc_fwd_dropped"), 0);
	agent_expect_eq(p->name, agent_field(&p->ag, "rx_bad_icrc"), 0);
}

/* Start "ping" on @from's QP @fq to @to's QP @tq (served), without waiting. */
bool ping_start(struct peer *from, int fq, struct peer *to, int tq, unsigned n, int retry_ms)
{
	return agent_send(&from->ag, "ping %d %d %s %x %d %u %d", fq, to->arg.id, to->arg.addr,
			  to->q[tq], tq, n, retry_ms);
}

bool ping_done(struct peer *from, unsigned n, bool exact)
{
	if (!agent_get_reply(&from->ag)) {
		agent_fail("%s: %s", from->name, from->ag.last);
		return false;
	}
	agent_expect_eq("pinged", agent_field(&from->ag, "pinged"), n);
	if (exact) {
		agent_expect_eq("retransmissions", agent_field(&from->ag, "retrans"), 0);
		agent_expect_eq("duplicates", agent_field(&from->ag, "dups"), 0);
	}
	return true;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The demultiplexer is per namespace: the one-host scenarios get their own. */
	if (argc == 2 && !t_isolate_netns())
		printf("# no namespace of our own: other umcast processes may take part\n");
	if (argc == 2 && strcmp(argv[1], "pingpong") == 0)
		scenario_pingpong();
	else if (argc == 2 && strcmp(argv[1], "pingpong6") == 0)
		scenario_pingpong6();
	else if (argc == 2 && strcmp(argv[1], "qkey") == 0)
		scenario_qkey();
	else if (argc == 2 && strcmp(argv[1], "noqp") == 0)
		scenario_noqp();
	else if (argc == 2 && strcmp(argv[1], "kill") == 0)
		scenario_kill();
	else if (argc == 2 && strcmp(argv[1], "conflict") == 0)
		scenario_conflict();
	else if (argc == 2 && strcmp(argv[1], "stopped") == 0)
		scenario_stopped();
	else if (argc == 2 && strcmp(argv[1], "adopt") == 0)
		scenario_adopt();
	else if (argc == 2 && strcmp(argv[1], "claim") == 0)
		scenario_claim();
	else if (argc == 2 && strcmp(argv[1], "squat") == 0)
		scenario_squat();
	else if (argc == 2 && strcmp(argv[1], "foreign") == 0)
		scenario_foreign();
	else if (argc == 6 && strcmp(argv[1], "netns") == 0)
		scenario_netns(argv);
	else if (argc == 7 && strcmp(argv[1], "rxe") == 0)
		scenario_rxe(argv);
	else {
		fprintf(stderr,
			"usage: uc_procs pingpong|pingpong6|qkey|noqp|kill|conflict|stopped|adopt\n"
			"       uc_procs claim|squat|foreign\n"
			"       uc_procs netns NSA NSB ADDRA ADDRB\n"
			"       uc_procs rxe NSHOST NSRXE ADDRHOST ADDRRXE PCAP\n");
		return 2;
	}
	printf("%s: %s (%d failure(s))\n", agent_failures ? "FAIL" : "PASS", argv[1],
	       agent_failures);
	return agent_failures ? 1 : 0;
}
