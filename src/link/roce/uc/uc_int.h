/* SPDX-License-Identifier: MIT */
/*
 * uc_int.h - RoCEv2 unicast (link/roce/uc/): a datagram sent to one of the
 * host's addresses reaches the process that owns its DestQP.  The objects
 * the files of unicast share: a port's unicast reception, the connection
 * of each of its addresses to their demultiplexer, the demultiplexer, and
 * the agent.  Files:
 *
 *   uc_agent.c   the agent thread: one epoll loop, which hands each event
 *                to the file below that owns what it names
 *   uc_client.c  this process as a client of each address's demultiplexer,
 *                and the port's calls (a QP's claim and release, a barrier)
 *   uc_demux.c   this process as the demultiplexer of an address
 *   uc_steer.c   its steering of DestQP (SO_REUSEPORT, classic BPF), and a
 *                port's hold on the steering group
 *   qpn.c        a QPN held by one process of the host at a time
 *   uc.h         the calls of the rest of the link and of the tests
 *   uc_proto.h   the messages between the processes
 *
 * Every umcast process is an HCA of its own with its own QPNs, yet all of
 * them share the host's addresses and UDP port 4791, where RoCEv2 peers
 * send.  A unicast datagram is given to one socket only, so per address one
 * process, the demultiplexer, owns addr:4791 and brings each datagram to
 * the process that claimed its DestQP:
 *
 *   - Rendezvous: an abstract AF_UNIX SOCK_SEQPACKET name made of the
 *     address (ROCE_UC_NAME_FMT).  Abstract names belong to the network
 *     namespace, as the UDP port does, need no file system and vanish with
 *     their process, even one killed by SIGKILL.  The process that binds
 *     the name is the demultiplexer; every process (the demultiplexer too,
 *     through its own listener) connects to it.
 *   - Registration: HELLO hands over, with SCM_RIGHTS, the sending end of a
 *     SOCK_DGRAM socketpair whose other end is the port's unicast input in
 *     the process's receive engine (rx.c); then CLAIM names its QPNs.  Each
 *     QPN is already this process's alone on the host (qpn.c), and CLAIM
 *     passes the socket that holds it as the proof (SCM_RIGHTS): a claim
 *     without it is refused (-EPERM), so that no process can take the QPN
 *     of one that has not registered again after a hand-over.  One that
 *     another client still has in the table (it exited, its hang-up not yet
 *     read) is refused (-EADDRINUSE), and QP creation takes the next number.
 *   - Data, steered: the demultiplexer makes every socket of addr:4791's
 *     SO_REUSEPORT group itself, in a known order, hands one to each
 *     process of its own user (the kernel's rule for such a group, which
 *     the hand-over must not undo: another user's are passed on), and
 *     attaches a classic BPF program mapping DestQP to the
 *     index of the owner's socket, so the kernel delivers each datagram
 *     straight to its owner (uc_steer.c says why the order can be
 *     trusted).  No privilege is needed.
 *   - Data, passed on: what reaches index 0, the demultiplexer's own
 *     socket, its agent thread sends on to the owner's input (uc_demux.c).
 *     Nothing is allocated per datagram on either path.
 *   - Exit: a process that exits or is killed closes its connection; the
 *     demultiplexer forgets its QPNs and keeps its socket for the next one.
 *     When the demultiplexer itself goes, every connection to it hangs up;
 *     steered datagrams keep reaching their owners (each process holds the
 *     whole group, so none of its sockets left it); each process's agent
 *     thread connects or binds the name anew (one wins, a holder of the
 *     whole group first), the winner takes the group over, and every
 *     process registers again.  Datagrams passed on meanwhile are lost (UD
 *     is unreliable); no process needs a restart.
 *
 * Claims at QP creation and releases at its destruction wait for the
 * answer (UMC_UC_REPLY_MS at most); registrations after a hand-over are not
 * waited for.
 * docs/design.md "Unicast" weighs the alternatives and gives the costs.
 *
 * Threads and locks: one agent thread per process (for every port and
 * address) does the demultiplexer's work and the reconnects; it never takes
 * a device lock and never waits for an answer.  Per address, ctl_lock
 * serialises the use of the connection to the demultiplexer and
 * steer_lock guards the port's hold on the reuseport group (its own socket,
 * the others, the group's size); per port, qset_lock guards the list of the
 * port's QPNs.  Order (ranked in umc_lock.h; docs/design.md, "Locking"):
 * dev->rx_lock, dev->lock, ctl_lock (a port's, in address order),
 * steer_lock, qset_lock, uc_ag_lock; the agent thread only try-locks
 * ctl_lock.  uc_ag_lock (process-wide, fork-safe, uc_agent.c) takes no
 * other lock.  Every descriptor
 * is recorded as it is made (UMC_FD_NEW), so a child of fork closes them.
 */
#ifndef UMC_LINK_ROCE_UC_INT_H
#define UMC_LINK_ROCE_UC_INT_H

#include <sys/un.h>
#include <time.h>

#include "link/roce/uc/uc.h"

enum uc_kind { UC_T_WAKE, UC_T_CTL, UC_T_LISTEN, UC_T_UDP, UC_T_CLIENT };

/* What an epoll event of the agent refers to. */
struct uc_tag {
	enum uc_kind kind;
	void *obj;
};

struct uc_leader;

/* A process registered with this process's demultiplexer. */
struct uc_client {
	struct uc_tag tag;
	struct uc_leader *lead;
	int ctl;		     /* the connection; -1 once dropped */
	int data;		     /* its forwarding socket (HELLO), -1 before */
	int sidx;		     /* its socket in the reuseport group (steering), or -1 */
	bool self;		     /* this port's own registration: it holds the group already */
	uid_t uid;		     /* its effective uid (SO_PEERCRED; -1: unknown) */
	bool same_user;		     /* ... is ours: it may hold the group */
	struct uc_client *dead_next; /* dropped, freed after the agent's round */
};

struct uc_slot {
	uint32_t qpn;
	struct uc_client *cl; /* NULL: empty */
};

struct uc_dom;

/*
 * What a socket of the group is to the demultiplexer.  One state per
 * index, not lists of them: no index is spare twice or given to two
 * clients.
 */
enum uc_sock_state {
	UC_SOCK_OWNED,	 /* index 0 (the demultiplexer's own), or one client's sidx */
	UC_SOCK_SPARE,	 /* its process went: drained, for the next one */
	UC_SOCK_AWAITED, /* of a group taken over: kept for the owner that comes back */
};

/* This process as the demultiplexer of one address (agent-owned once published). */
struct uc_leader {
	struct uc_dom *dom;
	int lfd;    /* the listener, bound to the name */
	uint64_t netns_cookie; /* its network namespace's (SO_NETNS_COOKIE), 0: unknown */
	int udp;    /* addr:4791, -1 until bound; index 0 of the reuseport group when steering */
	bool steer; /* the reuseport group of addr:4791 is this process's: cBPF steers DestQP */
	struct uc_tag tag_l, tag_u;
	uint64_t bind_at; /* next attempt at addr:4791 (monotonic ms) */
	unsigned bind_fails;
	struct uc_client **cl;
	int ncl, clcap;
	struct uc_client *dead;
	struct uc_slot *tab; /* QPN -> client, linear probing */
	uint32_t tmask, tshift, tcount;
	int *socks; /* steering: the group in index order ([0] = udp); never closed */
	enum uc_sock_state *sock_state; /* ... and what each one is */
	int nsock, sockcap;
	bool adopting;	      /* a predecessor's group: its owners come back until adopt_until */
	uint64_t adopt_until; /* monotonic ms */
	struct roce_uc_fwd fwd0; /* the template: destination = the address */
	/* One batch: datagrams in, then runs of them out per owner. */
	struct roce_rxq rq;
	struct mmsghdr smsg[UMC_RX_BATCH];
	struct iovec siov[UMC_RX_BATCH][2];
	struct roce_uc_fwd fwd[UMC_RX_BATCH];
	struct uc_client *sdst[UMC_RX_BATCH];
};

/* One address (GID) of a port: the connection to its demultiplexer. */
struct uc_dom {
	struct roce_uc *uc;
	int gid_index;
	struct sockaddr_storage addr; /* addr:4791 */
	socklen_t addr_len;
	struct sockaddr_un name;
	socklen_t name_len;
	struct uc_tag tag;
	pthread_mutex_t ctl_lock;
	int ctl; /* connection to the demultiplexer, -1: none */
	uint32_t seq;
	pid_t leader_pid;
	bool leader_port; /* its last answer said it holds addr:4791 */
	bool proto_warned;
	bool untrusted_warned;	/* said once that an untrusted process holds the name */
	_Atomic uint64_t retry_at; /* no reconnect before this (ms): an untrusted holder */
	/* The reuseport group of addr:4791 as this port holds it (under steer_lock). */
	pthread_mutex_t steer_lock;
	struct roce_ep *steer_ep; /* its own socket, which the engine reads */
	int own_idx;		  /* steer_ep's index in the group, or -1 */
	int *grp;		  /* the group's other sockets by index (-1: not held) */
	uint32_t grpcap, gsize;	  /* grp's slots; the group's size as last told */
	_Atomic uint64_t lost_at; /* when the demultiplexer hung up (ms), 0: not lost */
	atomic_bool reconnect;		/* lost: the agent reconnects */
	struct uc_leader *_Atomic lead; /* set once this process is the demultiplexer */
	struct uc_dom *next;		/* roce_uc_ag.doms */
};

/* A port's unicast reception. */
struct roce_uc {
	struct roce_ep set; /* the engine's one endpoint: an epoll of ep and each dom's steer_ep */
	struct roce_ep ep;  /* the input: datagrams passed on, and group sockets handed over */
	struct roce_ep *retired; /* replaced steered sockets' endpoints (fd -1), freed later */
	int data_tx;		 /* its peer, handed to each demultiplexer */
	struct roce_port *rp;
	pthread_mutex_t qset_lock;
	uint32_t *qpns; /* the port's claimed QPNs */
	int *qfds;	/* ... and the descriptor holding each (qpn.c): a claim's proof */
	int nqpn, qcap;
	int ndom;
	struct uc_dom *dom[UMC_MAX_GIDS];
};

/* The process's agent (uc_agent.c). */
struct uc_agent {
	int epfd, wake;
	bool running;
	struct uc_tag wake_tag;
	struct uc_dom *_Atomic doms; /* every address of every port: only grows */
	atomic_bool pending; /* a reconnect or port bind waits: poll every UMC_UC_RETRY_MS */
};
extern struct uc_agent roce_uc_ag;

/* The agent's clock: CLOCK_MONOTONIC in milliseconds. */
static inline uint64_t uc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* uc_agent.c */
/* Wake the agent, to run its tick (a reconnect or a bind waits). */
void roce_uc_agent_wake(void);
/* Take @fd out of the agent's epoll set. */
void roce_uc_ep_del(int fd);
/* Add @fd to the agent's epoll set for @events; its events carry @tag.  Returns 0 or -errno. */
int roce_uc_ep_add(int fd, uint32_t events, struct uc_tag *tag);
/* Start the agent thread, once per process.  Returns 0 or -errno. */
int roce_uc_agent_start(void);
/* Put @d on the agent's list of addresses, which only grows.  Takes uc_ag_lock. */
void roce_uc_agent_add_dom(struct uc_dom *d);

/* uc_client.c, for the agent */
void roce_uc_dom_retry(struct uc_dom *d);
void roce_uc_dom_hup(struct uc_dom *d);

/* uc_demux.c */
void roce_uc_lead_accept(struct uc_leader *l);
void roce_uc_lead_client(struct uc_leader *l, struct uc_client *cl);
void roce_uc_lead_forward(struct uc_leader *l);
void roce_uc_lead_bind(struct uc_leader *l);
int roce_uc_lead_start(struct uc_dom *d);

/* uc_steer.c */
int roce_uc_port_socket(const struct uc_dom *d, bool group);
bool roce_uc_steer_wanted(void);
void roce_uc_steer_reset(struct uc_leader *l);
int roce_uc_steer_program(struct uc_leader *l);
void roce_uc_steer_drain(struct uc_leader *l, int fd);
void roce_uc_steer_give(struct uc_leader *l, struct uc_client *cl);
void roce_uc_steer_return(struct uc_leader *l, struct uc_client *cl, uint32_t idx);
int roce_uc_steer_start(struct uc_leader *l);
void roce_uc_dom_steer_drop(struct uc_dom *d);
bool roce_uc_dom_whole(struct uc_dom *d);
int roce_uc_steer_adopt(struct uc_leader *l);
void roce_uc_steer_adopted(struct uc_leader *l);

#endif /* UMC_LINK_ROCE_UC_INT_H */
