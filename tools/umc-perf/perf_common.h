/* SPDX-License-Identifier: MIT */
/*
 * perf_common.h - what umc-perf and the bench/ baselines (udp-perf,
 * fi-perf) share, so that the three take the same options and measure and
 * print exactly alike:
 *
 *   - the options (perf_parse_args), each program taking its getopt(3)
 *     subset of them;
 *   - the four roles (perf_run): the sender's batches, pacing (-r), -n/-D
 *     and end marker; the receiver's accounting, stop conditions (end
 *     marker, -n, -I, -T) and totals; ping's timing, losses and samples;
 *     pong's echo count.  A transport supplies only how it sends and
 *     receives (struct perf_transport);
 *   - the payload's first 8 bytes: the message's sequence number, or the
 *     end-of-run marker PERF_FIN | messages sent;
 *   - the ready byte (-R), the time source (CLOCK_MONOTONIC);
 *   - the machine-readable "result ..." line (bench/run.sh parses it) and
 *     the human lines.
 *
 * perf_common.c is compiled into each of the three programs.
 */
#ifndef UMC_PERF_COMMON_H
#define UMC_PERF_COMMON_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* End-of-run marker: the sender sends it, with its count, after the data. */
#define PERF_FIN (1ull << 63)
/* Datagram overhead of a RoCEv2 UD SEND (BTH 12 + DETH 8 + ICRC 4) plus
 * 8 bytes, as the brief fixes for the baselines: they send size + 32 bytes. */
#define PERF_ROCE_OVERHEAD 32
/* How long the end marker is repeated (a full socket buffer may drop some). */
#define PERF_FIN_SPAN_NS (50 * 1000000ll)
#define PERF_FIN_GAP_NS (2 * 1000000ll)
/* -q at most: rxe's per-group attach limit (the baselines take as many). */
#define PERF_MAX_QPS 56

enum perf_mode { PERF_MODE_BW, PERF_MODE_PING, PERF_MODE_PONG };
enum perf_role { PERF_ROLE_SEND, PERF_ROLE_RECV, PERF_ROLE_PING, PERF_ROLE_PONG };

struct perf_opts {
	const char *group, *group2, *bind; /* -m, -g, -b */
	int port;			   /* -p */
	uint32_t size;			   /* -S */
	uint64_t count;			   /* -n */
	double duration;		   /* -D */
	int qps, batch, depth;		   /* -q, -B, -d */
	bool sender, send_only;		   /* -s, -o */
	bool events, connected;		   /* -e, -c */
	bool epoll_set;			   /* -E (udp-perf): -e through an epoll set */
	bool roce_shape;		   /* -G (udp-perf): RoCEv2's receive and send shape */
	bool roce_work;			   /* -V (udp-perf): -G and RoCEv2's user-space work */
	double rate;			   /* -r */
	int ready_fd;			   /* -R */
	int idle_ms, timeout_ms;	   /* -I, -T */
	enum perf_mode mode;		   /* -L */
	uint64_t warmup;		   /* -w */
	const char *dump;		   /* -O */
};

/* Receive accounting, one per receive queue (QP, socket, endpoint). */
struct perf_rx {
	uint64_t received;  /* data messages */
	uint64_t max_next;  /* highest sequence number seen + 1 */
	uint64_t fin_total; /* from the end marker */
	bool fin;
	bool done; /* end marker or -n seen (or the queue failed) */
	int64_t first_ns, last_ns;
};

/* What pong has echoed. */
struct perf_echo {
	uint64_t echoed;
	int64_t first, last; /* after the first and the last echo left */
};

/*
 * A program: its name, its options and how its transport sends and
 * receives.  Optional hooks may be NULL.
 */
struct perf_transport {
	const char *prog;      /* for messages: "umc-perf" */
	const char *name;      /* transport= of the result lines: "umcast" */
	const char *optstring; /* getopt(3): the options it takes (and h, t) */
	uint32_t size_max;     /* -S at most */
	int batch_max;	       /* -B at most */
	int port;	       /* -p by default */
	void (*usage)(FILE *out); /* prints the usage (-h: stdout; errors: stderr, exit 2) */
	struct perf_opts *o;   /* where perf_parse_args() puts them */

	/* Optional: what @role needs (sockets, endpoints), before its ready
	 * byte; and its release after a role that ran (or found nothing). */
	void (*open)(enum perf_role role);
	void (*close)(void);

	/* Sender.  Optional, before pacing: wait until messages
	 * [seq, seq + n) may be sent. */
	void (*reserve)(uint64_t seq, int n);
	/* Send messages [seq, seq + n), each with its number (perf_put_seq). */
	void (*send)(uint64_t seq, int n);
	/* Send one end marker, PERF_FIN | @sent. */
	void (*send_fin)(uint64_t sent);
	/* Optional: after each end marker's gap. */
	void (*fin_gap)(void);

	/* Receiver: the accounting of queue @q (of -q). */
	struct perf_rx *(*acct)(int q);
	/* Take what has arrived on the queues not done, accounting each
	 * message with perf_rx_take(); returns how many completions or
	 * datagrams there were (0: none) and in *@now when they were seen. */
	int (*recv)(int64_t *now);
	/* Optional: when nothing has arrived. */
	void (*recv_idle)(void);
	/* Queue @q's name in the per-queue lines (-q above 1). */
	void (*queue_name)(int q, char *buf, size_t len);
	/* Optional: after the result line. */
	void (*recv_end)(void);

	/* Ping: make message @seq ready to send; send it (the clock runs from
	 * just before); take what has arrived, *@got when it holds the echo of
	 * @seq, returning how many completions or datagrams (0: none);
	 * optional, after each round trip. */
	void (*ping_prepare)(uint64_t seq);
	void (*ping_send)(void);
	int (*ping_recv)(uint64_t seq, bool *got);
	void (*ping_after)(void);

	/* Pong: take what has arrived and echo it (perf_echoed() as echoes
	 * leave), *@stop at the end marker; returns how many completions or
	 * datagrams (0: none). */
	int (*pong)(struct perf_echo *e, bool *stop);

	/* -e: sleep until something may have arrived, at most @ms. */
	void (*wait)(int ms);
};

/* Options: defaults, then argv; the usage and exit 2 on anything wrong;
 * -h/--help (the usage on stdout) and --version exit 0. */
void perf_parse_args(const struct perf_transport *t, int argc, char **argv);
/* Run the role the options say; exits 3 when a receiver or ping got nothing. */
void perf_run(const struct perf_transport *t);

/* "prog: @what: strerror(errno)", exit 1. */
void perf_die(const char *what) __attribute__((noreturn));
/* A numeric IPv4 address; exits 2 if @s is not one. */
struct in_addr perf_parse_v4(const char *s);
/* The echo group by default: the -m address plus one. */
struct in_addr perf_next_group(struct in_addr a);

static inline int64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static inline void perf_put_seq(void *payload, uint32_t size, uint64_t seq)
{
	if (size >= sizeof(seq))
		memcpy(payload, &seq, sizeof(seq));
}

static inline uint64_t perf_get_seq(const void *payload, uint32_t size)
{
	uint64_t seq = 0;

	if (size >= sizeof(seq))
		memcpy(&seq, payload, sizeof(seq));
	return seq;
}

/* Account one message; returns true if it was the end marker. */
static inline bool perf_rx_account(struct perf_rx *r, uint64_t seq, int64_t now)
{
	if (seq & PERF_FIN) {
		if (!r->fin) {
			r->fin = true;
			r->fin_total = seq & ~PERF_FIN;
		}
		return true;
	}
	if (!r->received)
		r->first_ns = now;
	r->last_ns = now;
	r->received++;
	if (seq + 1 > r->max_next)
		r->max_next = seq + 1;
	return false;
}

/* Account message @seq of a queue; true, and the queue done, at the end
 * marker or at the @count'th message (-n; 0: no limit). */
static inline bool perf_rx_take(struct perf_rx *r, uint64_t seq, int64_t now, uint64_t count)
{
	bool end = perf_rx_account(r, seq, now) || (count && r->received >= count);

	if (end)
		r->done = true;
	return end;
}

/* Pong: @n echoes have just left. */
static inline void perf_echoed(struct perf_echo *e, int n)
{
	e->last = perf_now_ns();
	if (!e->echoed)
		e->first = e->last;
	e->echoed += (uint64_t)n;
}

#endif /* UMC_PERF_COMMON_H */
