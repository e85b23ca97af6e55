/* SPDX-License-Identifier: MIT */
/*
 * sm_proto.h - the protocol between umcast's SA client (src/sa) and the
 * subnet manager daemon umc-sm (sm/; umc-sm(8)).  Pure codecs: no I/O.
 *
 * Transport.  UDP datagrams to umc-sm (default 127.0.0.1:4795,
 * UMC_SM_UDP_PORT; `umc-sm --listen ADDR:PORT`, `UMC_SM=ADDR:PORT` on the
 * client side).  One datagram is one message; there is no fragmentation
 * and no connection.  A client port talks from one UDP socket, and that
 * socket's address and port (the "control endpoint") is what identifies
 * the port to umc-sm: the SM never trusts a LID or GID a client writes to
 * decide who is asking.  Every multi-byte field is big-endian.
 *
 * Header (24 bytes, every message):
 *
 *    0  magic     4   0x554D4353 ("UMCS")
 *    4  version   1   UMC_SM_PROTO_VERSION (1)
 *    5  type      1   enum umc_sm_type; replies are request | 0x80
 *    6  status    2   0 in requests; enum umc_sm_status in replies
 *    8  epoch     8   requests: the subnet epoch the client registered in
 *                     (0 before its first REGISTER); replies: the SM's
 *                     current epoch
 *   16  lid       2   requests: the sender's LID (0 if not registered);
 *                     replies: the LID of the port the reply is about
 *   18  reserved  2   0
 *   20  tid       4   chosen by the client, echoed in the reply
 *
 * Messages (body after the header; a reply whose status is not OK has no
 * body; any other length is malformed):
 *
 *   REGISTER   0x01  body 24:  0 data_addr (IPv4, 4)  4 data_port (2)
 *                    6 reserved (2)  8 port_guid (8, 0 = SM's choice)
 *                    16 nonce (8)
 *       A port (one per IB device of a client process) asks for a LID.
 *       data_addr:data_port is where it receives unicast IB packets (0:0
 *       for a port with no data plane, e.g. umc-sa).  The nonce is random
 *       per client port instance: a REGISTER from a control endpoint that
 *       already holds a port with the same nonce is a retransmission and
 *       gets the same answer; with another nonce the old port is removed
 *       first (as by its lease ending).  A non-zero port_guid asks for
 *       that GUID (kept across SM restarts by re-registering clients).
 *   REGISTER reply 0x81  body 60 (struct umc_sm_port_info): port GUID,
 *       subnet prefix (GID 0 = prefix + GUID), LID (2 up), SM LID (1), SM
 *       SL, port attributes (active/max MTU, width, speed, rate), the
 *       P_Key table, the lease in ms, the MLID -> IP map (MLID m is IPv4
 *       group mcast_base + (m - mlid_base), UDP port data_port, for m in
 *       mlid_base..mlid_max) and the SM's flags (send-only full member
 *       support, as ClassPortInfo says).  Status GUID_IN_USE: the asked
 *       GUID belongs to another live port; NO_RESOURCES: no LID left.
 *   RENEW      0x02  no body.  Renews the lease.  Reply 0x82 body 8:
 *                    0 lease_ms (4)  4 reserved (4).
 *   UNREGISTER 0x03  no body.  Removes the port; every membership is
 *                    deleted as by an SA Delete with JoinState 0xF.
 *                    Reply 0x83, no body.
 *   SA         0x04  body 256: one SA MAD (MgmtClass 0x03, ClassVersion
 *                    2).  Reply 0x84 body 256: the SA's response MAD.  A
 *                    multi-segment GetTable response is one 0x84 datagram
 *                    per RMPP segment; the client's RMPP ACK, STOP and
 *                    ABORT MADs go back as 0x04 datagrams (wire/ib_rmpp.h).
 *                    A MAD the SA does not answer (wrong SM_Key,
 *                    malformed) gets no reply.
 *   RESOLVE    0x05  body 4:  0 lid (2)  2 reserved (2).  Unicast
 *                    "switch forwarding": where does LID x receive?
 *                    Reply 0x85 body 20: 0 lid (2) 2 reserved (2)
 *                    4 data_addr (4) 8 data_port (2) 10 reserved (2)
 *                    12 port_guid (8).  Status NOT_FOUND: no port with
 *                    that LID, or one without a data endpoint.
 *   SUBSCRIBE  0x06  body 4:  0 mlid (2)  2 reserved (2).  Multicast
 *                    "switch forwarding": the port sends to MLID m (an
 *                    AH to it exists) and needs to know where m's packets
 *                    go.  The reply is FORWARD with m's forwarding; the
 *                    SM sends it again (tid 0) at every change until
 *                    UNSUBSCRIBE or the port goes.  Status INVALID: m is
 *                    not an MLID of the map; NO_RESOURCES: the port
 *                    holds its cap of subscriptions.
 *   FORWARD    0x86  body 16 + 8 * count:  0 mlid (2)  2 kind (1)
 *                    3 reserved (1)  4 version (4)  8 total (2)
 *                    10 offset (2)  12 count (2)  14 reserved (2), then
 *                    count entries of 8: 0 addr (IPv4, 4) 4 port (2)
 *                    6 lid (2).  MLID m's forwarding, version `version`
 *                    (from 1, per MLID and epoch, one more at each
 *                    change).  Kind MULTICAST: one entry, the IP group and
 *                    UDP port that carry m (lid 0).  Kind UNICAST: the
 *                    data endpoints of the `total` ports that receive m
 *                    (lid: the port's), the sender sends one copy to
 *                    each; a list longer than UMC_SM_FWD_SEG entries
 *                    travels in segments of UMC_SM_FWD_SEG, entries
 *                    [offset, offset + count).
 *   FWD_ACK    0x07  body 8:  0 mlid (2)  2 reserved (2)  4 version (4).
 *                    Every segment of that version of m's forwarding
 *                    arrived and the port sends by it.  No reply.
 *   UNSUBSCRIBE 0x08 body 4 as SUBSCRIBE.  Reply 0x88, no body.
 *   SQUATTED   0x09  body 4 as SUBSCRIBE.  The port, a receiving member of
 *                    m's group, cannot bind m's IP group and UDP port
 *                    (another local socket holds it): umc-sm forwards m by
 *                    unicast from then on.  Reply 0x89, no body; status
 *                    INVALID: the port receives no group on m.
 *
 * Registration, leases, epochs.  Every request but REGISTER must come from
 * the control endpoint of a registered port and carry that port's LID and
 * the current epoch; otherwise the reply (of the request's reply type) has
 * status UNKNOWN_PORT and the current epoch, and the client must register
 * again (its memberships are gone: the CM reports MULTICAST_ERROR
 * -ENETRESET).  Any accepted request renews the lease; a port whose lease
 * passes is removed as by UNREGISTER.  A restarted umc-sm has a new epoch
 * (high 32 bits: start time in seconds, low 32: random) and no ports.
 *
 * REGISTER reply flag UMC_SM_FLAG_UNICAST_FWD: umc-sm runs with
 * --forwarding unicast; every MLID is forwarded by unicast, so a port
 * receives MLIDs on its data endpoint and joins no IP group.
 *
 * A message with a wrong magic, a truncated header, an unknown type or a
 * body of the wrong length is dropped and counted, never answered.  A
 * message with the right magic and another version gets a header-only
 * reply with status BAD_VERSION.
 */
#ifndef UMC_WIRE_SM_PROTO_H
#define UMC_WIRE_SM_PROTO_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	UMC_SM_PKEY_TABLE_MAX = 8, /* P_Key entries a REGISTER reply carries */
	UMC_SM_MAGIC = 0x554D4353, /* "UMCS" */
	UMC_SM_PROTO_VERSION = 1,
	UMC_SM_HDR_LEN = 24,
	UMC_SM_FWD_HDR_LEN = 16,   /* FORWARD's fixed body */
	UMC_SM_FWD_ENTRY_LEN = 8,  /* one endpoint of a FORWARD */
	UMC_SM_FWD_SEG = 128,	   /* entries per FORWARD segment */
	UMC_SM_MAX_MSG = UMC_SM_HDR_LEN + UMC_SM_FWD_HDR_LEN + UMC_SM_FWD_SEG * UMC_SM_FWD_ENTRY_LEN,
	UMC_SM_TYPE_REPLY = 0x80,
	UMC_SM_FLAG_SENDONLY_FULL = 0x0001, /* umc_sm_port_info.sm_flags */
	UMC_SM_FLAG_UNICAST_FWD = 0x0002,   /* ... --forwarding unicast */
};
static_assert(UMC_SM_MAX_MSG >= UMC_SM_HDR_LEN + 256, "an SA datagram fits");

/* FORWARD kinds. */
enum umc_sm_fwd_kind {
	UMC_SM_FWD_MULTICAST = 1, /* one entry: the IP group and UDP port */
	UMC_SM_FWD_UNICAST = 2,	  /* the receiving ports' data endpoints */
};

enum umc_sm_type {
	UMC_SM_REGISTER = 0x01,
	UMC_SM_RENEW = 0x02,
	UMC_SM_UNREGISTER = 0x03,
	UMC_SM_SA = 0x04,
	UMC_SM_RESOLVE = 0x05,
	UMC_SM_SUBSCRIBE = 0x06,
	UMC_SM_FWD_ACK = 0x07,
	UMC_SM_UNSUBSCRIBE = 0x08,
	UMC_SM_SQUATTED = 0x09,
	UMC_SM_REGISTER_REPLY = UMC_SM_REGISTER | UMC_SM_TYPE_REPLY,
	UMC_SM_RENEW_REPLY = UMC_SM_RENEW | UMC_SM_TYPE_REPLY,
	UMC_SM_UNREGISTER_REPLY = UMC_SM_UNREGISTER | UMC_SM_TYPE_REPLY,
	UMC_SM_SA_REPLY = UMC_SM_SA | UMC_SM_TYPE_REPLY,
	UMC_SM_RESOLVE_REPLY = UMC_SM_RESOLVE | UMC_SM_TYPE_REPLY,
	UMC_SM_FORWARD = UMC_SM_SUBSCRIBE | UMC_SM_TYPE_REPLY,
	UMC_SM_UNSUBSCRIBE_REPLY = UMC_SM_UNSUBSCRIBE | UMC_SM_TYPE_REPLY,
	UMC_SM_SQUATTED_REPLY = UMC_SM_SQUATTED | UMC_SM_TYPE_REPLY,
};

enum umc_sm_status {
	UMC_SM_OK = 0,
	UMC_SM_UNKNOWN_PORT = 1, /* register again: port unknown, or old epoch / LID */
	UMC_SM_BAD_VERSION = 2,	 /* protocol version not spoken by this SM */
	UMC_SM_NO_RESOURCES = 3, /* no LID left */
	UMC_SM_NOT_FOUND = 4,	 /* RESOLVE: no such LID with a data endpoint */
	UMC_SM_GUID_IN_USE = 5,	 /* REGISTER: the asked GUID is another port's */
	UMC_SM_INVALID = 6,	 /* a field value the SM refuses */
};

/* Wire layouts (byte arrays only: no padding, any alignment). */
struct umc_sm_wire_hdr {
	uint8_t magic[4];
	uint8_t version;
	uint8_t type;
	uint8_t status[2];
	uint8_t epoch[8];
	uint8_t lid[2];
	uint8_t reserved[2];
	uint8_t tid[4];
};
static_assert(sizeof(struct umc_sm_wire_hdr) == UMC_SM_HDR_LEN, "SM header is 24 bytes");

struct umc_sm_wire_register {
	uint8_t data_addr[4];
	uint8_t data_port[2];
	uint8_t reserved[2];
	uint8_t port_guid[8];
	uint8_t nonce[8];
};
static_assert(sizeof(struct umc_sm_wire_register) == 24, "REGISTER body is 24 bytes");

struct umc_sm_wire_port_info {
	uint8_t port_guid[8];
	uint8_t subnet_prefix[8];
	uint8_t lid[2];
	uint8_t sm_lid[2];
	uint8_t sm_sl;
	uint8_t active_mtu;
	uint8_t max_mtu;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t rate;
	uint8_t pkey_count;
	uint8_t reserved0;
	uint8_t pkeys[UMC_SM_PKEY_TABLE_MAX][2];
	uint8_t lease_ms[4];
	uint8_t mcast_base[4];
	uint8_t mlid_base[2];
	uint8_t mlid_max[2];
	uint8_t data_port[2];
	uint8_t sm_flags[2];
};
static_assert(sizeof(struct umc_sm_wire_port_info) == 60, "REGISTER reply body is 60 bytes");

struct umc_sm_wire_renew_reply {
	uint8_t lease_ms[4];
	uint8_t reserved[4];
};
static_assert(sizeof(struct umc_sm_wire_renew_reply) == 8, "RENEW reply body is 8 bytes");

struct umc_sm_wire_resolve {
	uint8_t lid[2];
	uint8_t reserved[2];
};
static_assert(sizeof(struct umc_sm_wire_resolve) == 4, "RESOLVE body is 4 bytes");

struct umc_sm_wire_resolve_reply {
	uint8_t lid[2];
	uint8_t reserved0[2];
	uint8_t data_addr[4];
	uint8_t data_port[2];
	uint8_t reserved1[2];
	uint8_t port_guid[8];
};
static_assert(sizeof(struct umc_sm_wire_resolve_reply) == 20, "RESOLVE reply body is 20 bytes");

/* SUBSCRIBE, UNSUBSCRIBE, SQUATTED. */
struct umc_sm_wire_mlid {
	uint8_t mlid[2];
	uint8_t reserved[2];
};
static_assert(sizeof(struct umc_sm_wire_mlid) == 4, "an MLID body is 4 bytes");

struct umc_sm_wire_fwd {
	uint8_t mlid[2];
	uint8_t kind;
	uint8_t reserved0;
	uint8_t version[4];
	uint8_t total[2];
	uint8_t offset[2];
	uint8_t count[2];
	uint8_t reserved1[2];
	/* count entries of UMC_SM_FWD_ENTRY_LEN follow */
};
static_assert(sizeof(struct umc_sm_wire_fwd) == UMC_SM_FWD_HDR_LEN, "FORWARD's fixed body is 16 bytes");

struct umc_sm_wire_fwd_ack {
	uint8_t mlid[2];
	uint8_t reserved[2];
	uint8_t version[4];
};
static_assert(sizeof(struct umc_sm_wire_fwd_ack) == 8, "FWD_ACK body is 8 bytes");

/* Decoded forms.  IPv4 addresses in host order (0x7f000001 = 127.0.0.1). */
struct umc_sm_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t status;
	uint64_t epoch;
	uint16_t lid;
	uint32_t tid;
};

struct umc_sm_register {
	uint32_t data_addr;
	uint16_t data_port;
	uint64_t port_guid;
	uint64_t nonce;
};

/* A port as umc-sm registered it: the REGISTER reply body. */
struct umc_sm_port_info {
	uint64_t port_guid;
	uint64_t subnet_prefix;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t sm_sl;
	uint8_t active_mtu;   /* IB MTU code, 1 = 256 .. 5 = 4096 (enum ibv_mtu) */
	uint8_t max_mtu;
	uint8_t active_width; /* PortInfo LinkWidthActive: 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x */
	uint8_t active_speed; /* PortInfo LinkSpeedActive: 1 = SDR 2.5 Gb/s ... */
	uint8_t rate;	      /* PathRecord rate code (3 = 10 Gb/s) */
	uint8_t pkey_count;   /* 1..UMC_SM_PKEY_TABLE_MAX */
	uint16_t pkeys[UMC_SM_PKEY_TABLE_MAX];
	uint32_t lease_ms;
	uint32_t mcast_base; /* IPv4 group of MLID mlid_base */
	uint16_t mlid_base;
	uint16_t mlid_max;
	uint16_t data_port;
	uint16_t sm_flags; /* UMC_SM_FLAG_* */
};

struct umc_sm_resolve_reply {
	uint16_t lid;
	uint32_t data_addr;
	uint16_t data_port;
	uint64_t port_guid;
};

/* One segment of an MLID's forwarding (FORWARD). */
struct umc_sm_fwd {
	uint16_t mlid;
	uint8_t kind; /* enum umc_sm_fwd_kind */
	uint32_t version;
	uint16_t total;	 /* entries of the whole list */
	uint16_t offset; /* of this segment's first */
	uint16_t count;	 /* in this segment */
	const uint8_t *entries; /* count * UMC_SM_FWD_ENTRY_LEN bytes (umc_sm_fwd_entry_get) */
};

/* One entry: an IPv4 address (host order), a UDP port and a LID. */
struct umc_sm_fwd_entry {
	uint32_t addr;
	uint16_t port;
	uint16_t lid;
};

struct umc_sm_fwd_ack {
	uint16_t mlid;
	uint32_t version;
};

/* One decoded message. */
struct umc_sm_msg {
	struct umc_sm_hdr hdr;
	union {
		struct umc_sm_register reg;	      /* REGISTER */
		struct umc_sm_port_info port;	      /* REGISTER reply, OK */
		uint32_t lease_ms;		      /* RENEW reply, OK */
		uint16_t resolve_lid;		      /* RESOLVE */
		struct umc_sm_resolve_reply resolved; /* RESOLVE reply, OK */
		const uint8_t *mad;		      /* SA, SA reply: 256 bytes in the datagram */
		uint16_t mlid;			      /* SUBSCRIBE, UNSUBSCRIBE, SQUATTED */
		struct umc_sm_fwd fwd;		      /* FORWARD, OK */
		struct umc_sm_fwd_ack ack;	      /* FWD_ACK */
	};
};

/**
 * umc_sm_msg_decode - length-check and decode one datagram.
 * @p:   the datagram
 * @len: its length
 * @m:   the message; for SA datagrams m->mad points into @p
 *
 * Checks, once: the header is complete and has the magic; the version is
 * UMC_SM_PROTO_VERSION; the type is known; the body has exactly the
 * length of that type (none for a reply whose status is not OK); in a
 * REGISTER reply, the P_Key count is 1..UMC_SM_PKEY_TABLE_MAX, both MTU
 * codes are 1..5 (IBV_MTU_256..IBV_MTU_4096) with the active one at most
 * the largest, the lease is UMC_SM_LEASE_MIN_MS..UMC_SM_LEASE_MAX_MS and
 * the MLIDs are multicast ones, mlid_base..mlid_max within 0xC000..0xFFFE;
 * in a FORWARD, the MLID is 0xC000..0xFFFE, the kind known, the version
 * not 0, a MULTICAST one has exactly one entry, and the segment is one of
 * the list: offset a multiple of UMC_SM_FWD_SEG below total (0 for an
 * empty list), count min(UMC_SM_FWD_SEG, total - offset), the datagram
 * exactly that long; in SUBSCRIBE, UNSUBSCRIBE, SQUATTED and FWD_ACK the
 * MLID is 0xC000..0xFFFE.
 *
 * Context: pure.
 * Returns: 0; -EBADMSG for a short datagram, a wrong magic, a wrong body
 * length, an unknown type or a value out of range; -EPROTONOSUPPORT for
 * another version (then m->hdr is decoded, so that the receiver can
 * answer BAD_VERSION).
 */
int umc_sm_msg_decode(const uint8_t *p, size_t len, struct umc_sm_msg *m);

/**
 * umc_sm_msg_encode - write one message.
 * @out: at least UMC_SM_MAX_MSG bytes
 * @m:   the message; m->hdr.version is ignored (UMC_SM_PROTO_VERSION is
 *       written); the body follows m->hdr.type, and a reply whose status
 *       is not OK gets none
 *
 * Context: pure.
 * Returns: the datagram length, or 0 for an unknown type.
 */
size_t umc_sm_msg_encode(uint8_t *out, const struct umc_sm_msg *m);

/**
 * umc_sm_mlid_to_ip - the IPv4 group (host order) that carries MLID @mlid.
 * @pi:   the map, from the REGISTER reply
 * @mlid: a multicast LID
 *
 * Returns: mcast_base + (@mlid - mlid_base), or 0 if @mlid is outside
 * mlid_base..mlid_max.
 */
static inline uint32_t umc_sm_mlid_to_ip(const struct umc_sm_port_info *pi, uint16_t mlid)
{
	if (mlid < pi->mlid_base || mlid > pi->mlid_max)
		return 0;
	return pi->mcast_base + (uint32_t)(mlid - pi->mlid_base);
}

/**
 * umc_sm_fwd_entry_get - entry @i (< f->count) of a FORWARD segment.
 */
void umc_sm_fwd_entry_get(const struct umc_sm_fwd *f, unsigned i, struct umc_sm_fwd_entry *e);

/**
 * umc_sm_fwd_entry_put - write @e as the bytes of one FORWARD entry at @raw
 * (UMC_SM_FWD_ENTRY_LEN), for umc_sm_fwd.entries.
 */
void umc_sm_fwd_entry_put(uint8_t *raw, const struct umc_sm_fwd_entry *e);

/**
 * umc_sm_fwd_segments - how many FORWARD datagrams carry a list of @total
 * entries (1 for an empty one).
 */
static inline unsigned umc_sm_fwd_segments(unsigned total)
{
	return total ? (total + UMC_SM_FWD_SEG - 1) / UMC_SM_FWD_SEG : 1;
}

/** umc_sm_type_str - name of a message type ("REGISTER", "SA reply", ...; "UNKNOWN"). */
const char *umc_sm_type_str(uint8_t type);

/** umc_sm_status_str - name of a status ("OK", "UNKNOWN_PORT", ...; "UNKNOWN"). */
const char *umc_sm_status_str(uint16_t status);

#endif /* UMC_WIRE_SM_PROTO_H */
