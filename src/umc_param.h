/* SPDX-License-Identifier: MIT */
/*
 * umc_param.h - every limit and default of umcast, in one place.
 *
 * The device limits are the ones soft-RoCE (rxe) reports through
 * ibv_query_device(), so that a program sees the same numbers as on a
 * Linux rxe device (the kernel's drivers/infiniband/sw/rxe/rxe_param.h).
 * Tunables that only affect speed can be overridden at build
 * time with -D.
 */
#ifndef UMC_PARAM_H
#define UMC_PARAM_H

enum umc_param {
	/* Multicast limits (rxe): ENOMEM on attach beyond these. */
	UMC_MAX_MCAST_GRP = 8192,
	UMC_MAX_MCAST_QP_ATTACH = 56,
	UMC_MAX_TOT_MCAST_QP_ATTACH = 0x70000,

	/* Object limits reported by ibv_query_device(). */
	UMC_MAX_QP = 0x10000,
	UMC_MAX_QP_WR = 0x4000,
	UMC_MAX_SGE = 32,
	UMC_MAX_CQ = 0x4000,
	UMC_MAX_CQE = (1 << 16) - 1,
	UMC_MAX_MR = 1 << 16,
	UMC_MAX_PD = 0x7ff0,
	UMC_MAX_AH = 0x7ff0,
	UMC_MAX_PKEYS = 64,
	UMC_MAX_GIDS = 16,
	UMC_MAX_INLINE_DATA = 160,

	/* Devices: one per network interface with an address. */
	UMC_MAX_DEVICES = 64,

	/* Port: one port per device, as rxe. */
	UMC_PORT_NUM = 1,
	/* rxe derives the IB MTU from the netdev MTU minus this overhead. */
	UMC_ROCE_MTU_OVERHEAD = 80,

	/* UD: 40-byte GRH in front of every receive buffer (IBA 11.4.1.2). */
	UMC_GRH_LEN = 40,
	/*
	 * A datagram received straight into a posted buffer also leaves there,
	 * past the payload, at most this much of its tail: the place of an
	 * ImmDt (4), the pad (3), the ICRC (4), an IB VCRC (2); umcast(7).
	 */
	UMC_RX_TAIL_MAX = 13,

	/* RoCEv2 (IBA Annex A17, rxe). */
	UMC_ROCEV2_UDP_PORT = 4791,
	UMC_ROCEV2_SPORT_BASE = 0xC000,
	UMC_MCAST_QPN = 0xFFFFFF,
	UMC_DEFAULT_PKEY = 0xFFFF,
	UMC_ROCEV2_HOP_LIMIT = 64,

	/* QP numbers: 0 and 1 are special (SMI, GSI); rxe starts at 0x11. */
	UMC_QPN_FIRST = 0x11,
	/*
	 * Each process is its own HCA, so two processes on one host could pick
	 * the same QPN.  Each process starts its QPNs at a pid-derived stride
	 * of this size to keep them apart (see docs/design.md).
	 */
	UMC_QPN_STRIDE = 0x400,

	/*
	 * A link may find a QPN taken (RoCE: held by another process of the
	 * network namespace, link/roce/uc/qpn.c, or still the demultiplexer's for
	 * one that exited, uc_demux.c); QP creation then tries the next
	 * numbers, this many in all, before failing with EADDRINUSE.
	 */
	UMC_QPN_TRIES = 64,

	/*
	 * RoCEv2 unicast demultiplexer (link/roce/uc/): one
	 * process per host address owns UDP 4791 and forwards each datagram
	 * to the process that owns its DestQP.
	 */
	UMC_UC_MSG_QPNS = 64,	     /* QPNs per claim message */
	UMC_UC_BACKLOG = 128,	     /* pending connections to the demultiplexer */
	UMC_UC_USER_CONNS = 256,     /* ... and open ones of each other user */
	UMC_UC_TABLE_MIN = 256,	     /* initial QPN table slots (a power of two) */
	UMC_UC_REPLY_MS = 2000,	     /* QP creation waits this long for the claim's answer */
	UMC_UC_CONNECT_MS = 2000,    /* ... and this long for an election under way */
	UMC_UC_RETRY_MS = 10,	     /* retry period of a pending reconnect or port bind */
	UMC_UC_RETRY_SLOW_MS = 1000, /* ... once the port has been refused for a second */
	UMC_UC_ADOPT_DELAY_MS = 50,  /* after a hang-up, only a holder of the whole group stands */
	UMC_UC_ADOPT_MS = 1000,	     /* a group taken over waits this long for its owners */
	UMC_UC_GROUP_MAX = 0xffff,   /* sockets of a reuseport group (the kernel's limit) */

	/* CM: librdmacm's RDMA_MAX_PRIVATE_DATA. */
	UMC_CM_MAX_PRIVATE_DATA = 256,
};

/* Data path batching (speed only). */
#ifndef UMC_RX_BATCH
#define UMC_RX_BATCH 64
#endif
#ifndef UMC_TX_BATCH
#define UMC_TX_BATCH 64
#endif
/* Largest datagram the receive path accepts; larger ones are counted too_long. */
#ifndef UMC_RX_SLOT
#define UMC_RX_SLOT 9216
#endif
/*
 * The background receive thread takes over after the application has not
 * received for this long (microseconds); the period doubles up to the
 * maximum each time it sees the application receiving, and each time it
 * drains nothing for an armed CQ (rx_thread.c).
 */
#ifndef UMC_RX_IDLE_US
#define UMC_RX_IDLE_US 50
#endif
#ifndef UMC_RX_IDLE_MAX_US
#define UMC_RX_IDLE_MAX_US 10000
#endif
/*
 * ... unless the application thread is only waiting for a CPU: runnable,
 * with under a tenth of this long (microseconds) more on one (rx_sched.c).
 */
#ifndef UMC_RX_PROBE_US
#define UMC_RX_PROBE_US 1000
#endif
/*
 * A busy-polling application reads an endpoint that has delivered nothing
 * while the device's other endpoints delivered UMC_RX_COLD_AFTER packets
 * only every UMC_RX_COLD_STRIDE-th poll (progress.c "Cold endpoints").
 */
#ifndef UMC_RX_COLD_AFTER
#define UMC_RX_COLD_AFTER 16
#endif
#ifndef UMC_RX_COLD_STRIDE
#define UMC_RX_COLD_STRIDE 8
#endif
/*
 * A thread whose ibv_poll_cq found nothing this many times in a row
 * yields its CPU (sched_yield(2)) at each further empty poll, until one
 * finds something (cq.c umc_poll_cq); $UMC_POLL_YIELD sets the count, 0
 * never.
 */
#ifndef UMC_POLL_YIELD_AFTER
#define UMC_POLL_YIELD_AFTER 256
#endif
/*
 * A group endpoint whose last datagram carried at least this many payload
 * bytes gets one receive more lent than its last burst brought, so that a
 * burst one longer lands in place too; below it the copy of that one
 * datagram costs less than the lend (rx_lend.c umc_rx_lend).
 */
#ifndef UMC_RX_SPARE_LEND_MIN
#define UMC_RX_SPARE_LEND_MIN 1024
#endif
/* Receive socket buffer asked for (the kernel caps it at net.core.rmem_max). */
#ifndef UMC_RX_SOCKBUF
#define UMC_RX_SOCKBUF (4 << 20)
#endif

/*
 * Simulated InfiniBand subnet: umc-sm and the library's SA client
 * (umc-sm(8); src/wire/sm_proto.h is the protocol between them).
 */
/* The system user the Debian package runs umc-sm as (debian/umc-sm.postinst): trusted (sa_trust.c). */
#define UMC_SM_USER "_umc-sm"
enum umc_sm_param {
	/* UDP port umc-sm listens on (on 127.0.0.1 unless --listen says otherwise). */
	UMC_SM_UDP_PORT = 4795,
	/*
	 * UDP port of IB packets sent to an MLID's IP group.  Never 4791, so
	 * that Wireshark does not take IB-in-UDP for RoCEv2.
	 */
	UMC_IB_DATA_PORT = 4796,

	/* Port lease: a port that does not renew for this long leaves every group. */
	UMC_SM_LEASE_MS = 10000,
	UMC_SM_LEASE_MIN_MS = 100,
	UMC_SM_LEASE_MAX_MS = 3600000,

	/* LIDs (IBA 4.1.3): the SM's own port is LID 1, clients from 2 up. */
	UMC_SM_LID = 1,
	UMC_SM_SL = 0,
	UMC_SM_FIRST_CLIENT_LID = 2,
	UMC_SM_MAX_UCAST_LID = 0xBFFF,
	UMC_SM_MAX_PORTS = UMC_SM_MAX_UCAST_LID - UMC_SM_FIRST_CLIENT_LID + 1,
	UMC_SM_LID_SLOTS_MIN = 64, /* umc-sm's LID index at start; it doubles as ports come */

	/*
	 * Multicast LIDs 0xC000..0xFFFE (0xFFFF is the permissive LID).  The IPoIB
	 * broadcast group holds 0xC000, so applications get 0xC001 and up; MLID m
	 * travels to IPv4 group mcast_base + (m - 0xC000).
	 */
	UMC_SM_MLID_BASE = 0xC000,
	UMC_SM_MLID_MAX = 0xFFFE,
	UMC_SM_MLID_SPACE = 0x4000, /* MLIDs an IP base must have room for */

	/* Port attributes umc-sm hands out (query_port; IBA 14.2.5.6 PortInfo). */
	UMC_SM_PORT_MTU = 4,	   /* active MTU 2048, as an ibsim port */
	UMC_SM_PORT_MAX_MTU = 5,   /* 4096 */
	UMC_SM_PORT_WIDTH = 2,	   /* LinkWidthActive 4x */
	UMC_SM_PORT_SPEED = 1,	   /* LinkSpeedActive SDR, 2.5 Gb/s per lane */
	UMC_SM_PORT_RATE = 3,	   /* 4x SDR = 10 Gb/s (PathRecord rate code) */

	/*
	 * The IPoIB broadcast group ff12:401b:ffff::ffff:ffff, as OpenSM 3.3.23
	 * creates it from its default partitions.conf: Q_Key 0x0B1B, MTU
	 * selector 2 / 2048, rate selector 2 / 10 Gb/s, PacketLifeTime selector
	 * 2 / 18, Scope 2 (link-local).
	 */
	UMC_IPOIB_QKEY = 0x0B1B,
	UMC_IPOIB_BCAST_MTU = 0x84,
	UMC_IPOIB_BCAST_RATE = 0x83,
	UMC_IPOIB_BCAST_PKT_LIFE = 0x92,
	UMC_IPOIB_BCAST_SCOPE = 2,

	/* SA (IBA 15): ClassPortInfo.RespTimeValue (4.096 us * 2^16 = 268 ms, as OpenSM). */
	UMC_SM_RESP_TIME_VALUE = 16,
	/* SA-assigned MGIDs: candidates tried before ERR_NO_RESOURCES (as OpenSM). */
	UMC_SM_MGID_TRIES = 1000,

	/* RMPP sender (umc-sm, IBA 13.6): resend an unacknowledged window after this. */
	UMC_SM_RMPP_RESEND_MS = 200,
	UMC_SM_RMPP_RETRIES = 5,
	UMC_SM_RMPP_MAX_WINDOW = 128,	  /* segments beyond the last ACK, whatever the receiver asks */
	UMC_SM_RMPP_MAX_PER_PORT = 4,	  /* --max-rmpp-per-port: open transfers; more: BUSY */
	UMC_SM_RMPP_MAX_PER_HOST = 16,	  /* --max-rmpp-per-host */
	UMC_SM_RMPP_MAX_BYTES = 64 << 20, /* all transfers together; more: BUSY */
	UMC_SM_RMPP_TIME_MS = 10000,	  /* total time limit of a transfer: ABORT T2L */
	UMC_SM_RMPP_LONE_TIDS = 4,	  /* one-MAD GetTable answers a port's ACKs are matched to */

	/* umc-sm's caps per source host and per port (umc-sm(8) CAPS). */
	UMC_SM_MAX_PORTS_PER_HOST = 1024,
	UMC_SM_MAX_GROUPS_PER_PORT = UMC_MAX_MCAST_GRP, /* what a device can attach anyway */
	UMC_SM_MAX_GROUPS_PER_HOST = 8192, /* half the MLIDs: no one host takes them all */
	/* A port told BUSY by umc-sm has its queries dropped for this long. */
	UMC_SM_BUSY_QUIET_MS = 100,
	/* Requests that wait (umc-sm's defer.c): more are refused. */
	UMC_SM_DEFER_REGISTER = 256,	     /* REGISTERs of new ports */
	UMC_SM_DEFER_QUERIES_PER_HOST = 16, /* scanning queries of one source host */
	UMC_SM_DEFER_QUERIES = 1024,	     /* ... of all hosts */
	/*
	 * Multicast forwarding (umc-sm's fwd.c, umc-sm(8) FORWARDING): a
	 * FORWARD not acknowledged is sent again after UMC_SM_FWD_RESEND_MS,
	 * UMC_SM_FWD_TRIES times in all, then at the port's next RENEW; an
	 * SA Set or Delete that changed an MLID's receivers is answered once
	 * its senders acknowledged the new list, or after UMC_SM_FWD_HOLD_MS
	 * (--forwarding-wait, at most UMC_SM_FWD_HOLD_MAX_MS: a client sends
	 * its Set again after a third of UMC_SA_TIMEOUT_MS and gives up after
	 * it); at most UMC_SM_FWD_HELD_MAX replies wait at once (more go at
	 * once).
	 */
	UMC_SM_FWD_RESEND_MS = 100,
	UMC_SM_FWD_TRIES = 5,
	UMC_SM_FWD_HOLD_MS = 250,
	UMC_SM_FWD_HOLD_MAX_MS = 2000,
	UMC_SM_FWD_HELD_MAX = 4096,

	/* SA client (library): MAD transactions as the kernel's (multicast.c send_join()). */
	UMC_SA_TIMEOUT_MS = 3000, /* whole transaction, split over the retries */
	UMC_SA_RETRIES = 2,	  /* resends within the timeout */
	UMC_SA_REGISTER_TIMEOUT_MS = 3000,
	UMC_SA_REGISTER_RESEND_MS = 250,
	UMC_SA_RESOLVE_TIMEOUT_MS = 1000,
	UMC_SA_CLOSE_WAIT_MS = 100, /* UNREGISTER reply wait on close */
	UMC_SA_PORT_REQ_WAIT_MS = 2000, /* umc-ctl reregister/port-down: the events raised */
	UMC_SA_RMPP_WINDOW = 32,    /* segments the client lets the SM send per ACK */
	/*
	 * Response datagrams the client's sent transactions may bring at once
	 * (sa_txn.c): a Get/Set/Delete 1, a GetTable UMC_SA_RMPP_WINDOW.  The
	 * kernel's default socket buffer (212992 bytes) holds 166 of them, each
	 * charged about 1.3 KiB; half is left for RENEW and RESOLVE replies.
	 */
	UMC_SA_WINDOW = 64,
	UMC_SA_RMPP_MAX_BYTES = 16 << 20, /* largest reassembled GetTable reply */
	UMC_SA_TXN_BUCKETS = 256,
	UMC_SA_LID_CACHE = 64,	    /* resolved LIDs cached per port */
	UMC_SA_SQUAT_TRIES = 12,    /* SQUATTED sends, UMC_SA_REGISTER_RESEND_MS apart */
	UMC_SA_FWD_WAIT_MS = 1000,  /* an AH to an MLID waits this long for its forwarding */
};

/*
 * The IPoIB address of the simulated IB port when UMC_IB_ADDR does not say:
 * an address of lo (127/8 is all local on Linux) that no RoCE device claims.
 */
#define UMC_IB_DEFAULT_ADDR "127.0.0.2"

/* 64-bit defaults (an enum cannot portably hold them). */
#define UMC_SM_SUBNET_PREFIX 0xfe80000000000000ULL /* fe80::/64, the default GID prefix */
#define UMC_SM_DEFAULT_SM_KEY 1ULL		   /* OpenSM's default sa_key */
#define UMC_SM_GUID_BASE 0x0200000000000000ULL	   /* SM-assigned port GUIDs: base + n */
#define UMC_SM_MCAST_BASE 0xEFFFC000U		   /* 239.255.192.0/18: exactly 16384 MLIDs */

#endif /* UMC_PARAM_H */
