/* SPDX-License-Identifier: MIT */
/*
 * capture_msgs.h - the messages capture_sender puts on the wire and
 * capture_check expects to find in the capture (test_capture.sh).
 *
 * Five UD sends covering both opcodes and every pad count: 0 bytes (pad
 * 0), 1 byte (pad 3), 13 bytes (pad 3), 1024 bytes (pad 0; the largest
 * payload of a 1500-byte-MTU rxe port) and 102 bytes (pad 2).  PSNs are
 * 0..4 (the CM's QP starts at SQ PSN 0).
 */
#ifndef CAPTURE_MSGS_H
#define CAPTURE_MSGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cap_msg {
	bool imm;	   /* SEND_WITH_IMM (opcode 0x65) or SEND (0x64) */
	uint32_t imm_host; /* immediate data, host order */
	uint32_t len;	   /* payload bytes */
};

static const struct cap_msg cap_msgs[] = {
	{false, 0, 0},
	{true, 0x11223344u, 1},
	{false, 0, 13},
	{true, 0x00000011u, 1024},
	{true, 0xfedcba98u, 102},
};

enum { CAP_N = sizeof(cap_msgs) / sizeof(cap_msgs[0]), CAP_MAX_LEN = 1024 };

/* Byte @j of message @i's payload. */
static inline uint8_t cap_byte(unsigned i, size_t j)
{
	return (uint8_t)(i * 37u + j * 11u + 1u);
}

#endif /* CAPTURE_MSGS_H */
