/* SPDX-License-Identifier: MIT */
/*
 * uc_proto.h - RoCEv2 unicast: what the umcast processes of one host (one
 * network namespace) say to each other.  The names they meet at; the
 * control messages between a process and the demultiplexer of an address
 * (uc_client.c, uc_demux.c); and what the demultiplexer puts on a port's input
 * (uc_demux.c, uc_steer.c; rx.c reads it): a datagram's IP context, or a
 * socket of the steering group.  Layouts only; both ends are processes of
 * this host, in host byte order except where a field says otherwise.
 */
#ifndef UMC_LINK_ROCE_UC_PROTO_H
#define UMC_LINK_ROCE_UC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "umc_param.h"

/* ------------------------------------------------------------------------- */
/* Names.                                                                    */

/*
 * Where a demultiplexer listens: the abstract AF_UNIX SOCK_SEQPACKET name
 * "\0" ROCE_UC_NAME_FMT, with the address as inet_ntop(3) writes it (and
 * "%ifindex" for a scoped IPv6 address).
 */
#define ROCE_UC_NAME_FMT "umcast-rocev2-demux:%s"

/*
 * Where a QPN is held (qpn.c): the abstract AF_UNIX name "\0"
 * ROCE_QPN_NAME_FMT, with the QPN (24 bits, in hex).
 */
#define ROCE_QPN_NAME_FMT "umcast-rocev2-qpn:%06x"

/* ------------------------------------------------------------------------- */
/* A process and an address's demultiplexer (SOCK_SEQPACKET).               */

enum { ROCE_UC_MAGIC = 0x55434d55, ROCE_UC_VERSION = 2 }; /* 2: a claim carries its proof */

enum roce_uc_op {
	ROCE_UC_HELLO = 1, /* with SCM_RIGHTS: the client's input (a SOCK_DGRAM socket) */
	ROCE_UC_CLAIM,	   /* qpn[0..count): route these to me (count 0: a barrier); with
			    * SCM_RIGHTS, per QPN in order, the socket that holds it
			    * (ROCE_QPN_NAME_FMT): a QPN without it is refused, -EPERM */
	ROCE_UC_RELEASE,   /* qpn[0..count): no longer mine */
	ROCE_UC_REPLY,	   /* to every request: status, the refused qpn[] */
};

enum { ROCE_UC_F_PORT = 1 }; /* ROCE_UC_REPLY flags: the demultiplexer holds addr:4791 */

/*
 * One control message, of ROCE_UC_MSG_LEN(count) bytes.  The header up to
 * @pid stays the same in every version, so a peer of another version can be
 * told -EPROTONOSUPPORT.  Any other message that is not exactly this (and,
 * for HELLO, an input that is not an AF_UNIX SOCK_DGRAM socket: -EINVAL)
 * ends the connection.
 */
struct roce_uc_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t seq;
	/* ROCE_UC_REPLY: 0, -EADDRINUSE, -EPERM, -EINVAL, -ENOMEM, -EPROTONOSUPPORT */
	int32_t status;
	uint32_t pid;	/* ROCE_UC_REPLY: the demultiplexer's */
	uint16_t flags; /* ROCE_UC_REPLY: ROCE_UC_F_* */
	uint16_t count; /* entries of qpn[] used */
	uint32_t qpn[UMC_UC_MSG_QPNS];
};

#define ROCE_UC_MSG_LEN(n) (offsetof(struct roce_uc_msg, qpn) + (size_t)(n) * sizeof(uint32_t))


/* ------------------------------------------------------------------------- */
/* The demultiplexer to a port's input (SOCK_DGRAM).                        */

/*
 * What the demultiplexer puts in front of a unicast datagram it passes on:
 * the IP/UDP context only the owner of the UDP socket saw, which the
 * receiver needs for the ICRC and the GRH.  Host byte order except the
 * addresses (network order, IPv4 in the first 4 bytes).  family
 * ROCE_UC_FWD_CTL marks no datagram but a struct roce_uc_ctl.
 */
struct roce_uc_fwd {
	uint8_t family; /* 4 or 6, or ROCE_UC_FWD_CTL */
	uint8_t tclass;
	uint8_t hop_limit;
	uint8_t reserved;
	uint16_t sport;
	uint16_t reserved2;
	uint32_t flow_label;
	uint8_t src[16];
	uint8_t dst[16];
};

enum { ROCE_UC_FWD_CTL = 0xff };

/*
 * What the demultiplexer of address @dst tells a port on its input about
 * dst:4791's reuseport group (uc_steer.c): one of its sockets
 * (with SCM_RIGHTS): the port's own to read (ROCE_UC_CTL_OWN), or another
 * one to hold, so that no socket leaves the group while some process
 * lives and any of them can take the group over; or that the group is new
 * and every socket of the old one is to be let go.
 */
struct roce_uc_ctl {
	uint8_t family;	     /* ROCE_UC_FWD_CTL */
	uint8_t op;	     /* enum roce_uc_ctl_op */
	uint8_t addr_family; /* dst's: 4 or 6 */
	uint8_t flags;	     /* ROCE_UC_CTL_OWN */
	uint32_t index;	     /* ROCE_UC_CTL_SOCK: the socket's index in the group */
	uint32_t size;	     /* ROCE_UC_CTL_SOCK: the group's size now */
	uint8_t dst[16];
	uint8_t reserved[16];
};

enum roce_uc_ctl_op {
	ROCE_UC_CTL_SOCK = 1, /* a socket of the group */
	ROCE_UC_CTL_FRESH,    /* a new group: let go of the old one's sockets */
};

enum { ROCE_UC_CTL_OWN = 1 };

_Static_assert(sizeof(struct roce_uc_ctl) == sizeof(struct roce_uc_fwd),
	       "the input's control messages have the size of a datagram's header");

#endif /* UMC_LINK_ROCE_UC_PROTO_H */
