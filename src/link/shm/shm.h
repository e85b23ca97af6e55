/* SPDX-License-Identifier: MIT */
/*
 * shm.h - the same-host path: a multicast group's datagrams between the
 * processes of one host and network namespace through shared memory,
 * past the kernel's per-socket work (umcast(7), SAME-HOST PATH).
 *
 * The kernel delivers a multicast datagram to every local socket bound to
 * its group and port: it clones and queues it once per socket, in the
 * sender's context on loopback, and every receiver copies it out with a
 * system call.  An HCA loops multicast back in hardware instead.  Here a
 * sender writes each datagram once into a ring of its own in a file of
 * the group, and every local receiver of the group reads it from there,
 * checks it as it would a datagram from a socket (the same decode and
 * ICRC), and delivers it through the same engine.
 *
 * The group's file (group.c).  One per network namespace, interface and
 * group, in the user's private run directory (stat/rundir.h; or the
 * directory $UMC_SHM_DIR names, shared by users who choose to):
 *
 *   header    magic, version, ring size, @gen, the wake masks
 *   readers   UMC_SHM_READERS slots: a process's receiving endpoint of
 *             the group (its group socket's inode, whether it holds the
 *             IP membership, the generation it registered at)
 *   senders   UMC_SHM_SENDERS slots, each with one ring (ring.c) that
 *             only its tenant writes
 *
 * @gen counts every change of the slots.  A sender writes a datagram to
 * its ring instead of to the kernel's local delivery ("ring mode") only
 * while every UDP socket of the namespace that the kernel would give the
 * datagram to is the group socket of a registered reader, and one of those
 * readers holds the membership (peers.c asks the kernel, sock_diag(7)).
 * It checks again whenever @gen moved and every UMC_SHM_RECHECK_MS.  So a
 * datagram reaches each local socket by one way, never two: the ring, or
 * the kernel (a receiver with the path off, a raw UDP socket, rxe).  On
 * loopback a datagram in ring mode is not sent at all (lo loops every
 * multicast datagram back whatever IP_MULTICAST_LOOP says); on another
 * interface it is sent with IP_MULTICAST_LOOP off, for the other hosts.
 *
 * Each record carries the @gen its sender had seen: a reader takes those
 * sent after it registered (the sender then counted it), none before.
 *
 * Flow control, after Aeron's IPC publications (which run at most their
 * window ahead of their slowest subscriber) and what the kernel does in
 * effect (a sender on loopback pays every receiver's clone and queue, so
 * it runs no faster than they take it): each reader publishes how far it
 * has read in each ring, and a sender about to overwrite what a reader
 * has not read wakes it and sleeps (futex(2) on its ring's @flow_seq)
 * until every reader it waits for has read to a sixteenth of a ring past
 * that point; a reader that gets there wakes it.  So a reader that keeps
 * reading paces its senders and loses nothing.
 *
 * A reader is slow when a sender has waited for it UMC_SHM_WAIT_MS
 * (over one send or many in a row) and it read less than a sixteenth of
 * a ring (UMC_SHM_PROGRESS_DIV) meanwhile: a stopped or stalled one, one
 * not run for that long, or one slower than that rate
 * (512 KiB per 200 ms with the default ring, about 2.6 MB/s).  The sender
 * then gives up on it: it overwrites, the reader counts what it lost
 * (rx_overrun) as a full socket buffer's drops, and the sender counts
 * the give-up (tx_shm_overrun) and does not wait for that reader again
 * during UMC_SHM_GRACE_MS, unless it catches up to less than half a ring
 * behind (one held up for a moment loses only what was overwritten
 * meanwhile).  A stopped reader so costs each sender at most
 * UMC_SHM_WAIT_MS of sleep every UMC_SHM_GRACE_MS, and no reader can hold
 * a sender below a sixteenth of a ring per UMC_SHM_WAIT_MS: to be waited
 * for again it must have caught up, so the sender writes about half a
 * ring between two waits for it.
 *
 * Nothing read from the file is trusted: another process of the user may
 * write anything there.  A reader copies a record out before it checks
 * it, bounds every offset and length by its own copy of the layout, and
 * reads a bounded number of records per call; a record overwritten while
 * it was copied, or a ring whose positions make no sense, costs that
 * ring's datagrams (counted: rx_overrun, rx_malformed), never a write
 * outside the reader's buffers or a wait.
 */
#ifndef UMC_LINK_SHM_H
#define UMC_LINK_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

enum {
	UMC_SHM_READERS = 64,	 /* receiving endpoints per group and host (one wake bit each) */
	UMC_SHM_SENDERS = 32,	 /* sending processes per group and host */
	UMC_SHM_ALIGN = 64,	 /* records start on cache lines */
	UMC_SHM_RECHECK_MS = 20, /* a sender asks the kernel who receives at least this often */
	/*
	 * A sender about to overwrite what a reader has not read sleeps until
	 * it has read on; one that reads less than 1/UMC_SHM_PROGRESS_DIV of
	 * a ring in UMC_SHM_WAIT_MS meanwhile is given up on: overwritten,
	 * and not waited for during UMC_SHM_GRACE_MS (flow control above).
	 */
	UMC_SHM_WAIT_MS = 200,
	UMC_SHM_GRACE_MS = 4000,
	UMC_SHM_PROGRESS_DIV = 16,
	/*
	 * Groups a port receives through the path (each costs a file, a
	 * mapping and a FIFO), and sends to through it; the rest only through
	 * the kernel, and they announce nothing (a sender sees them within
	 * UMC_SHM_RECHECK_MS).
	 */
	UMC_SHM_MAX_GROUPS = 64,
};

/* Bytes of one ring by default ($UMC_SHM_RING: a power of two, 64 KiB to 256 MiB). */
#define UMC_SHM_RING_DEFAULT (8u << 20)

/* ------------------------------------------------------------------------- */
/* A ring (ring.c): one writer, any number of readers that may fall behind. */

/* The writer's positions, in shared memory, each on its own cache line. */
struct umc_shm_ring_ctl {
	_Alignas(64) _Atomic uint64_t tail_intent; /* where the record being written ends */
	_Alignas(64) _Atomic uint64_t tail;	   /* where the last published record ends */
	_Atomic uint64_t latest;		   /* where the last published record starts */
	_Atomic uint64_t next_seq;		   /* the next datagram's number */
	/*
	 * Flow control: @flow_wait is nonzero while the writer waits until
	 * its readers have read to @flow_want.  A reader whose position
	 * crosses @flow_want then moves @flow_seq and wakes the writer, which
	 * sleeps on it (futex(2)): once per reader and wait, not once per
	 * read, and never through a crossing (it reads @flow_seq before the
	 * positions).
	 */
	_Alignas(64) _Atomic uint32_t flow_wait;
	_Atomic uint32_t flow_seq;
	_Atomic uint64_t flow_want;
};

/* One record's header, in front of its datagram (the UDP payload). */
struct umc_shm_rec {
	uint32_t len;	  /* the record's bytes, header included, a multiple of UMC_SHM_ALIGN */
	uint32_t type;	  /* UMC_SHM_REC_DATA or _PAD */
	uint64_t seq;	  /* the datagram's number in its ring, from 0 */
	uint64_t gen;	  /* the group's generation the sender had seen */
	uint32_t dlen;	  /* bytes of the datagram */
	uint32_t flow_label;
	uint16_t sport;	  /* the sending QP's UDP source port, as on the wire */
	uint8_t family;	  /* 4 or 6 */
	uint8_t tclass;
	uint8_t hop_limit;
	uint8_t reserved[3];
	uint8_t src[16];  /* the source address (4 bytes for IPv4) */
};
_Static_assert(sizeof(struct umc_shm_rec) <= UMC_SHM_ALIGN, "a record header fits a line");

enum { UMC_SHM_REC_DATA = 1, UMC_SHM_REC_PAD = 2 };

/* A ring as one process sees it: the shared control block and record area. */
struct umc_shm_ring {
	struct umc_shm_ring_ctl *ctl;
	uint8_t *buf;
	uint64_t size; /* bytes of @buf: a power of two, the reader's own copy */
};

/* A reader's place in one ring. */
struct umc_shm_cursor {
	uint64_t pos;	 /* the next record's position */
	uint64_t seq;	 /* the next datagram's expected number */
	bool based;	 /* @seq is known (otherwise the next record sets it) */
	uint64_t min_gen; /* records of an older generation are skipped, not lost */
};

/* What umc_shm_ring_get() found. */
enum umc_shm_got {
	UMC_SHM_EMPTY,	  /* nothing new */
	UMC_SHM_DATA,	  /* a datagram, copied */
	UMC_SHM_TOO_LONG, /* a datagram longer than the room given: consumed, not copied */
	UMC_SHM_CORRUPT,  /* a record that makes no sense: the ring is skipped to its tail */
};

/*
 * umc_shm_ring_put - append one datagram of @dlen bytes, gathered from
 * @iov (@niov entries), behind header @h (len, type and seq are filled
 * here).  Context: the caller serializes the ring's writers.  Never
 * blocks; a slow reader is overrun, not waited for.  Returns 0, or
 * -EMSGSIZE when the record would not fit half the ring.
 */
int umc_shm_ring_put(const struct umc_shm_ring *r, struct umc_shm_rec *h, const struct iovec *iov,
		     int niov, size_t dlen);

/*
 * umc_shm_ring_get - copy the next datagram of @r after cursor @c into
 * @iov (@niov entries, @room bytes), its header into @h.  Records of a
 * generation below c->min_gen are skipped.  *@lost: datagrams the writer
 * overwrote before they were read (this call found them missing).
 * Context: any; the cursor is the caller's.  Returns what it found.
 */
enum umc_shm_got umc_shm_ring_get(const struct umc_shm_ring *r, struct umc_shm_cursor *c,
				  struct umc_shm_rec *h, const struct iovec *iov, int niov,
				  size_t room, uint64_t *lost);

/*
 * umc_shm_ring_end - where a record of @dlen bytes put now would end (its
 * padding included): it overwrites what lies a ring's size before that.
 * Context: the ring's writer.
 */
uint64_t umc_shm_ring_end(const struct umc_shm_ring *r, size_t dlen);

/* umc_shm_ring_pending - does @r hold a record after @c? */
bool umc_shm_ring_pending(const struct umc_shm_ring *r, const struct umc_shm_cursor *c);

/* umc_shm_ring_reset - a new tenant's empty ring. */
void umc_shm_ring_reset(const struct umc_shm_ring *r);

/* ------------------------------------------------------------------------- */
/* A group's file and this process's part in it (group.c, peers.c).         */

struct umc_shm_grp;

/* Where a group's file is: namespace, interface and the group's address. */
struct umc_shm_key {
	unsigned ifindex;
	bool loopback;	   /* the interface is lo: ring mode sends nothing to the kernel */
	uint8_t family;	   /* 4 or 6 */
	uint8_t addr[16];  /* the group (4 bytes for IPv4) */
	uint16_t port;	   /* the UDP port its datagrams go to (host order) */
};

/*
 * umc_shm_enabled - whether this process uses the path: unless $UMC_SHM
 * is "0" (umcast(7) SAME-HOST PATH).  Read once.
 */
bool umc_shm_enabled(void);

/*
 * umc_shm_open - this process's handle of the group's file, made and
 * mapped if needed.  Context: may block (file system); no lock of the
 * data path held.  Returns the handle or NULL (no run directory, a file
 * that is not a group file of this version: the path is then not used
 * for the group, and the kernel carries everything as without it).
 */
struct umc_shm_grp *umc_shm_open(const struct umc_shm_key *key);

/* umc_shm_close - release what umc_shm_open() made (slots already left). */
void umc_shm_close(struct umc_shm_grp *g);

/*
 * umc_shm_announce - tell the host's senders that the set of receivers
 * of the group changed (a socket was opened or closed, a membership
 * taken or dropped), so that they ask the kernel again before their
 * next datagram.  For a process with the path off too.
 */
void umc_shm_announce(struct umc_shm_grp *g);

/* --- reading --- */

/*
 * umc_shm_reader_join - register this process's endpoint of the group:
 * its group socket @sock_fd (whose inode the senders look for), and a
 * wake-up FIFO, whose read end is returned in *@wake_fd (for the engine
 * and the completion channels to poll).  Returns 0 or -errno (-ENOSPC:
 * every reader slot is taken by a live process).
 */
int umc_shm_reader_join(struct umc_shm_grp *g, int sock_fd, int *wake_fd);
/* umc_shm_reader_leave - the reverse; closes the wake-up FIFO. */
void umc_shm_reader_leave(struct umc_shm_grp *g);
/* umc_shm_reader_member - this reader holds the group's IP membership (or not). */
void umc_shm_reader_member(struct umc_shm_grp *g, bool member);

/* One datagram read from a ring: what a socket would have shown of it. */
struct umc_shm_dgram {
	struct umc_shm_rec h; /* family, src, sport, tclass, hop_limit, flow_label, dlen */
	enum umc_shm_got got;
};

/*
 * umc_shm_read - the next datagram of any sender's ring, into @iov (@niov
 * entries, @room bytes).  Rings are read in turn, each to its end before
 * the next.  *@lost: datagrams found overrun meanwhile; *@corrupt:
 * records refused.  Context: the caller serializes reads of @g (the
 * device's rx_lock).  Returns false when every ring is empty.
 */
bool umc_shm_read(struct umc_shm_grp *g, struct umc_shm_dgram *d, const struct iovec *iov,
		  int niov, size_t room, uint64_t *lost, uint64_t *corrupt);

/*
 * umc_shm_reader_arm - whether a thread of this process may sleep on the
 * wake-up FIFO (@on): senders then write a byte to it after their next
 * datagram.  Arming with a datagram already waiting writes that byte at
 * once, so a poll(2) that follows returns.  umc_shm_reader_woken empties
 * the FIFO when a sender has written to it.  Context: as umc_shm_read.
 */
void umc_shm_reader_arm(struct umc_shm_grp *g, bool on);
void umc_shm_reader_woken(struct umc_shm_grp *g);

/*
 * umc_shm_reader_publish - tell the senders how far this reader has read
 * in their rings (after a burst of umc_shm_read), so that they do not
 * overwrite it.  Context: as umc_shm_read.
 */
void umc_shm_reader_publish(struct umc_shm_grp *g);

/* --- sending --- */

/*
 * umc_shm_ring_mode - whether this process's next datagrams to the group
 * go to its ring (true) or to the kernel (false): asks the kernel who
 * receives when the group's generation moved or UMC_SHM_RECHECK_MS
 * passed (peers.c), and takes a sender slot the first time it says yes.
 * *@gen: the generation to stamp on them.  Context: the caller serializes
 * sends to @g (umc_shm_send_lock).  Raw system calls only.
 */
bool umc_shm_ring_mode(struct umc_shm_grp *g, uint64_t *gen);

/*
 * umc_shm_send - append one datagram to this process's ring (after
 * umc_shm_ring_mode() said yes), stamped @gen, with the IP context in @h;
 * first, while a reader has not read what it would overwrite, sleep until
 * it has, or give up on it when it is slow (flow control above).  Returns
 * 0 or -EMSGSIZE.  umc_shm_send_done - after a batch: wake the readers
 * that sleep.  Returns the readers given up on since its last call (for
 * tx_shm_overrun).  Context: as umc_shm_ring_mode.
 */
int umc_shm_send(struct umc_shm_grp *g, struct umc_shm_rec *h, const struct iovec *iov, int niov,
		 size_t dlen);
unsigned umc_shm_send_done(struct umc_shm_grp *g);

/* The lock of a group's senders in this process (QPs of one process may send at once). */
void umc_shm_send_lock(struct umc_shm_grp *g);
void umc_shm_send_unlock(struct umc_shm_grp *g);

/*
 * umc_shm_peers_ok - does every UDP socket of this namespace that the
 * kernel would give a datagram to @key's group and port on its interface
 * belong to @inodes (@n of them)?  sock_diag(7).  Returns 1, 0, or
 * -errno when the kernel cannot say (then the caller sends to it).
 */
int umc_shm_peers_ok(const struct umc_shm_key *key, const uint64_t *inodes, int n);

#endif /* UMC_LINK_SHM_H */
