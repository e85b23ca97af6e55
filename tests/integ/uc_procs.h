/* SPDX-License-Identifier: MIT */
/*
 * uc_procs.h - what the files of the uc_procs program share (uc_procs.c
 * says what each scenario checks): the agent, one simulated application
 * process with two UD QPs driven over agent.h's pipes (uc_agent.c); the
 * orchestrator's handle of an agent and its checks (uc_procs.c); the
 * scenarios by theme: delivery between processes of one host
 * (uc_delivery.c), the demultiplexer's death and its hand-over
 * (uc_handover.c), other hosts and rxe's own packets (uc_hosts.c).
 */
#ifndef TESTS_INTEG_UC_PROCS_H
#define TESTS_INTEG_UC_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent.h"

enum {
	NQP = 2,         /* QPs per agent */
	WAIT_MS = 10000, /* bound on any wait for datagrams */
	QKEY = 0x11111111,
};

/* What an agent is started with. */
struct agent_arg {
	int id;
	const char *addr;    /* its IPv4 address: selects the device */
	const char *netns;   /* run in this named namespace, or NULL */
	const char *qpnbase; /* UMC_QPN_BASE, or NULL */
	uint32_t qkey;
};

/* uc_agent.c: the agent's main (agent_spawn()), and the checksum of its raw receptions. */
int uc_agent_main(void *arg, int cmd);
uint32_t fnv(const uint8_t *p, size_t n);

/* uc_procs.c: the orchestrator's handle of an agent. */
struct peer {
	struct agent ag;
	struct agent_arg arg;
	char name[8];
	uint32_t q[NQP];
	pid_t pid;
	uint32_t q0_seq; /* the next DATA seq its q0 expects from markers */
};

bool steering(void);
bool start(struct peer *p, int id, const char *addr, const char *netns, const char *qpnbase,
	   uint32_t qkey);
unsigned long counter(struct peer *p, const char *key);
void expect_counter(struct peer *p, const char *key, unsigned long want);
void expect_clean(struct peer *p);
bool ping_start(struct peer *from, int fq, struct peer *to, int tq, unsigned n, int retry_ms);
bool ping_done(struct peer *from, unsigned n, bool exact);

/* The scenarios (uc_procs.c's head comment says what each checks); uc_delivery.c: */
void scenario_pingpong(void);
void scenario_pingpong6(void);
void scenario_qkey(void);
void scenario_noqp(void);
void scenario_conflict(void);
/* uc_handover.c: */
void scenario_kill(void);
void scenario_stopped(void);
void scenario_adopt(void);
void scenario_claim(void);
void scenario_squat(void);
void scenario_foreign(void);
/* uc_hosts.c: */
void scenario_netns(char **argv);
void scenario_rxe(char **argv);

#endif /* TESTS_INTEG_UC_PROCS_H */
