// SPDX-License-Identifier: MIT
/*
 * uc_delivery.c - uc_procs scenarios on one host: every message reaches
 * the QP it was sent to and no other (pingpong, pingpong6), Q_Key and
 * DestQP violations are counted and dropped (qkey, noqp), two processes
 * numbering QPs from one base get distinct QPNs (conflict).
 */
#include <stdlib.h>

#include "uc_procs.h"

void scenario_pingpong(void)
{
	enum { N = 300 };
	struct peer a, b, c, d;

	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&c, 2, "127.0.0.1", NULL, NULL, 0) || !start(&d, 3, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_expect_eq("demultiplexer is A", agent_field(&b.ag, "leader"), (unsigned long)a.pid);
	agent_cmd(&a.ag, "ucsync 0");
	agent_expect_eq("A leads every address", agent_field(&a.ag, "leading"),
			agent_field(&a.ag, "addrs"));
	agent_cmd(&c.ag, "serve 1");
	agent_cmd(&a.ag, "serve 0");
	/* Two ping-pongs at once, across all four processes and both QPs of each. */
	ping_start(&b, 0, &c, 1, N, 0);
	ping_start(&d, 1, &a, 0, N, 0);
	ping_done(&b, N, true);
	ping_done(&d, N, true);
	/* No message went to another QP of the same process, or anywhere else. */
	agent_cmd(&b.ag, "quiet 1 0");
	agent_cmd(&c.ag, "quiet 0 0");
	agent_cmd(&d.ag, "quiet 0 0");
	agent_cmd(&a.ag, "quiet 1 0");
	struct peer *all[] = {&a, &b, &c, &d};

	/*
	 * Steered, nobody passed any on, but for B's and D's replies when
	 * they are another user's (UC_PROCS_ODD_UID: such a process is given
	 * no socket of the group); else the demultiplexer all of them.
	 */
	unsigned long passed = !steering() ? 4 * N : getenv("UC_PROCS_ODD_UID") ? 2 * N : 0;

	for (int i = 0; i < 4; i++) {
		expect_clean(all[i]);
		expect_counter(all[i], "rx_delivered", N);
		expect_counter(all[i], "rx_no_qp", 0);
		expect_counter(all[i], "uc_qpn_taken", 0);
		expect_counter(all[i], "uc_forwarded", i == 0 ? passed : 0);
	}
	expect_counter(&c, "served1", N);
	expect_counter(&c, "served0", 0);
	expect_counter(&a, "served0", N);
	expect_counter(&a, "served1", 0);
	for (int i = 3; i >= 0; i--)
		agent_finish(&all[i]->ag);
}

/* IPv6: two processes on ::1 ping-pong (replies from the IPv6 GRH), a third one idle. */
void scenario_pingpong6(void)
{
	enum { N = 200 };
	struct peer a, b, c;

	if (!start(&a, 0, "::1", NULL, NULL, 0) || !start(&b, 1, "::1", NULL, NULL, 0) ||
	    !start(&c, 2, "::1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_cmd(&c.ag, "ucsync 0");
	agent_cmd(&c.ag, "serve 1");
	ping_start(&b, 0, &c, 1, N, 0);
	ping_done(&b, N, true);
	agent_cmd(&a.ag, "quiet 0 0");
	agent_cmd(&a.ag, "quiet 1 0");
	expect_clean(&b);
	expect_clean(&c);
	expect_counter(&c, "served1", N);
	expect_counter(&a, "uc_forwarded", steering() ? 0 : 2 * N);
	agent_finish(&c.ag);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}

void scenario_qkey(void)
{
	enum { K = 5 };
	struct peer a, b, c;

	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, NULL, 0) || !start(&c, 2, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_cmd(&c.ag, "ucsync 0");
	/* Wrong Q_Key: counted at the receiving QP, never delivered. */
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 %d", c.arg.addr, c.q[0], 0x22222222, K);
	/* The same seqs with the high bit set: B's QP's own Q_Key (QKEY) goes out. */
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 %d", c.arg.addr, c.q[0], 0x80000000, K);
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x %d %d", c.arg.addr, c.q[0], 0xdeadbeef | 0x80000000,
		  K, K);
	agent_cmd(&c.ag, "recv 0 %d %s %x", 2 * K, b.arg.addr, b.q[0]);
	agent_cmd(&c.ag, "quiet 0 0");
	expect_counter(&c, "rx_qkey_viol", K);
	expect_counter(&c, "rx_delivered", 2 * K);
	expect_clean(&c);
	agent_finish(&c.ag);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}

void scenario_noqp(void)
{
	enum { K = 7, G = 3, NOBODY = 0xfffff0 };
	struct peer a, b, c;

	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, NULL, 0) || !start(&c, 2, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 %d", c.arg.addr, NOBODY, QKEY, K);
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 %d", c.arg.addr, 0xffffff, QKEY, G);
	/* All of them end at the demultiplexer, counted there, delivered nowhere. */
	agent_cmd(&a.ag, "waitcnt rx_no_qp %d", K);
	agent_cmd(&a.ag, "waitcnt rx_no_group %d", G);
	expect_counter(&a, "rx_no_qp", K);
	expect_counter(&a, "rx_no_group", G);
	expect_counter(&a, "uc_forwarded", 0);
	expect_counter(&a, "rx_packets", 0);
	expect_counter(&b, "rx_packets", 0);
	expect_counter(&c, "rx_packets", 0);
	expect_counter(&c, "rx_no_qp", 0);
	agent_finish(&c.ag);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}

void scenario_conflict(void)
{
	enum { N = 20 };
	struct peer a, b;

	if (!start(&a, 0, "127.0.0.1", NULL, "0x11", 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, "0x11", 0))
		return;
	agent_expect_eq("A q0", a.q[0], 0x11);
	agent_expect_eq("A q1", a.q[1], 0x12);
	agent_expect_eq("B q0", b.q[0], 0x13);
	agent_expect_eq("B q1", b.q[1], 0x14);
	expect_counter(&b, "uc_qpn_taken", 2);
	expect_counter(&a, "uc_qpn_taken", 0);
	agent_cmd(&a.ag, "serve 0");
	ping_start(&b, 1, &a, 0, N, 0);
	ping_done(&b, N, true);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}
