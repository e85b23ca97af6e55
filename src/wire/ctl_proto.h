/* SPDX-License-Identifier: MIT */
/*
 * ctl_proto.h - the run-time control messages that umc-ctl(1) sends to an
 * umcast process or to umc-sm, and their replies.  Pure codecs: no I/O.
 *
 * Transport.  A Unix SOCK_SEQPACKET socket of the process, PID.ctl in its
 * private directory (umc-ctl(1), FILES), which only its own user (and
 * root) can reach; the process also checks the peer's credentials
 * (SO_PEERCRED).  One connection carries one request and its reply.
 * Multi-byte fields are big-endian.
 *
 * Message (header 20 bytes, then len bytes of text):
 *
 *    0  magic     4   0x554D4343 ("UMCC")
 *    4  version   1   UMC_CTL_VERSION (1)
 *    5  op        1   enum umc_ctl_op; a reply is its request's op | 0x80
 *    6  reserved  2   0
 *    8  status    4   requests 0; replies 0 or a negative errno (two's
 *                     complement)
 *   12  arg       4   the op's number (below), else 0
 *   16  len       2   bytes of text, at most UMC_CTL_TEXT_MAX
 *   18  reserved  2   0
 *   20  text      len bytes, no NUL among them
 *
 * Requests:
 *   FAULTS      0x01  text: a SPEC (umc-faults(7)); "" clears the rules.
 *                     Reply text: the rules now in force, canonical, with
 *                     their seed; or, with -EINVAL, the one line saying
 *                     where the SPEC is wrong (the old rules stay).
 *   REREGISTER  0x02  text: a device name, or "" for every InfiniBand
 *                     port: the port behaves as after a client reregister.
 *   PORT_DOWN   0x03  arg: seconds (1 to UMC_CTL_MAX_SECS); text as
 *                     REREGISTER: the port goes down, and up again after
 *                     arg seconds.
 *   SM_FAILOVER 0x10  umc-sm: lose every port and group, as a restart.
 *   SM_SILENT   0x11  umc-sm: answer nothing for arg seconds (0: answer
 *                     again now).
 *   SM_REJECT   0x12  umc-sm: answer every join (MCMemberRecord Set) of
 *                     group text (an address or MGID) with MAD status arg;
 *                     arg 0 stops.
 * Replies carry the request's op | 0x80, the status and a line of text
 * (an error's reason, or what was done).
 *
 * A message with another magic, a truncated header, an unknown op, a
 * reserved field not zero, a length that differs from the datagram's or a
 * NUL in the text does not decode (-EBADMSG); another version gives
 * -EPROTONOSUPPORT, which a server answers with a header-only reply of
 * that status and its own version.
 */
#ifndef UMC_WIRE_CTL_PROTO_H
#define UMC_WIRE_CTL_PROTO_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

enum {
	UMC_CTL_MAGIC = 0x554D4343, /* "UMCC" */
	UMC_CTL_VERSION = 1,
	UMC_CTL_HDR_LEN = 20,
	UMC_CTL_TEXT_MAX = 4096,
	UMC_CTL_MAX_MSG = UMC_CTL_HDR_LEN + UMC_CTL_TEXT_MAX,
	UMC_CTL_REPLY = 0x80,
	UMC_CTL_MAX_SECS = 3600, /* PORT_DOWN, SM_SILENT */
};

enum umc_ctl_op {
	UMC_CTL_FAULTS = 0x01,
	UMC_CTL_REREGISTER = 0x02,
	UMC_CTL_PORT_DOWN = 0x03,
	UMC_CTL_SM_FAILOVER = 0x10,
	UMC_CTL_SM_SILENT = 0x11,
	UMC_CTL_SM_REJECT = 0x12,
};

struct umc_ctl_wire_hdr {
	uint8_t magic[4];
	uint8_t version;
	uint8_t op;
	uint8_t reserved0[2];
	uint8_t status[4];
	uint8_t arg[4];
	uint8_t len[2];
	uint8_t reserved1[2];
};
static_assert(sizeof(struct umc_ctl_wire_hdr) == UMC_CTL_HDR_LEN, "control header is 20 bytes");

/* A decoded message; text is NUL-terminated. */
struct umc_ctl_msg {
	uint8_t version; /* decode: as received; encode writes UMC_CTL_VERSION */
	uint8_t op;	 /* enum umc_ctl_op, | UMC_CTL_REPLY in a reply */
	int32_t status;
	uint32_t arg;
	uint16_t len; /* bytes of text */
	char text[UMC_CTL_TEXT_MAX + 1];
};

/**
 * umc_ctl_encode - write @m into @buf (UMC_CTL_MAX_MSG bytes).
 * The text is @m->len bytes (at most UMC_CTL_TEXT_MAX; longer is cut).
 * Returns: the message's length.
 */
size_t umc_ctl_encode(uint8_t *buf, const struct umc_ctl_msg *m);

/**
 * umc_ctl_set_text - @m's text and len from the C string @s (cut at
 * UMC_CTL_TEXT_MAX bytes).
 */
void umc_ctl_set_text(struct umc_ctl_msg *m, const char *s);

/**
 * umc_ctl_decode - decode the message of @len bytes at @buf into @m.
 * Returns: 0; -EBADMSG (malformed, as above); -EPROTONOSUPPORT (another
 * version: @m->version and @m->op are set, nothing else).
 */
int umc_ctl_decode(const uint8_t *buf, size_t len, struct umc_ctl_msg *m);

/** umc_ctl_op_str - "faults", "reregister", ...; "?" for an unknown op (a reply's too). */
const char *umc_ctl_op_str(uint8_t op);

#endif /* UMC_WIRE_CTL_PROTO_H */
