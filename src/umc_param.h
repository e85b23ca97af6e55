/* SPDX-License-Identifier: MIT */
/*
 * umc_param.h - every limit and default of umcast, in one place.
 *
 * The device limits are the ones soft-RoCE (rxe) reports through
 * ibv_query_device(), so that a program sees the same numbers as on a
 * Linux rxe device (kernel rxe_param.h; shared/reference/kernel-behaviour.md
 * section 5.1).  Tunables that only affect speed can be overridden at build
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
	 * A link may find a QPN taken on its port (RoCE: by another process
	 * sharing the host's address, link/roce/ucast.c); QP creation then
	 * tries the next numbers, this many in all, before failing with
	 * EADDRINUSE.
	 */
	UMC_QPN_TRIES = 64,

	/*
	 * RoCEv2 unicast demultiplexer (link/roce/ucast.c): one process per
	 * host address owns UDP 4791 and forwards each datagram to the
	 * process that owns its DestQP.
	 */
	UMC_UC_MSG_QPNS = 64,	     /* QPNs per claim message */
	UMC_UC_BACKLOG = 128,	     /* pending connections to the demultiplexer */
	UMC_UC_TABLE_MIN = 256,	     /* initial QPN table slots (a power of two) */
	UMC_UC_REPLY_MS = 2000,	     /* QP creation waits this long for the claim's answer */
	UMC_UC_CONNECT_MS = 2000,    /* ... and this long for an election under way */
	UMC_UC_RETRY_MS = 10,	     /* retry period of a pending reconnect or port bind */
	UMC_UC_RETRY_SLOW_MS = 1000, /* ... once the port has been refused for a second */

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
 * maximum each time it sees the application receiving (progress.c).
 */
#ifndef UMC_RX_IDLE_US
#define UMC_RX_IDLE_US 50
#endif
#ifndef UMC_RX_IDLE_MAX_US
#define UMC_RX_IDLE_MAX_US 10000
#endif
/* Receive socket buffer asked for (the kernel caps it at net.core.rmem_max). */
#ifndef UMC_RX_SOCKBUF
#define UMC_RX_SOCKBUF (4 << 20)
#endif

#endif /* UMC_PARAM_H */
