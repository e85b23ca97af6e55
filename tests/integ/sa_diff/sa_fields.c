// SPDX-License-Identifier: MIT
/*
 * sa_fields.c - the SA MAD header, MCMemberRecord and ClassPortInfo as
 * tables of (name, IBA bit offset, width), and a big-endian bit-field
 * reader and writer over them.
 *
 * Bit offsets use the IBA's numbering: bit 0 is the most significant bit
 * of byte 0 (IBA Vol 1 13.4.3 common MAD header, 13.6.2.1 RMPP header,
 * 15.2.1.1 SA header, 15.2.5.17 MCMemberRecord, 13.4.8.1 ClassPortInfo).
 */
#include <string.h>

#include "sa_client.h"

/* MAD header, from MAD byte 0.  TransactionID is checked, not printed. */
const struct sa_field sa_hdr_fields[] = {
	{ "BaseVersion", 0, 8, SA_FMT_HEX, "basever" },
	{ "MgmtClass", 8, 8, SA_FMT_HEX, "mgmtclass" },
	{ "ClassVersion", 16, 8, SA_FMT_HEX, "classver" },
	{ "Method", 24, 8, SA_FMT_HEX, NULL }, /* R bit included */
	{ "Status", 32, 16, SA_FMT_HEX, NULL },
	{ "ClassSpecific", 48, 16, SA_FMT_HEX, NULL },
	{ "AttributeID", 128, 16, SA_FMT_HEX, NULL },
	{ "AttributeModifier", 160, 32, SA_FMT_HEX, "attrmod" },
	{ "RMPPVersion", 192, 8, SA_FMT_HEX, NULL, true },
	{ "RMPPType", 200, 8, SA_FMT_HEX, NULL, true },
	{ "RMPPFlags", 213, 3, SA_FMT_HEX, NULL, true },
	{ "RMPPStatus", 216, 8, SA_FMT_HEX, NULL, true },
	{ "SegmentNumber", 224, 32, SA_FMT_HEX, NULL, true },
	{ "PayloadLength", 256, 32, SA_FMT_HEX, NULL, true },
	{ "SM_Key", 288, 64, SA_FMT_HEX, "smkey" },
	{ "AttributeOffset", 352, 16, SA_FMT_HEX, NULL },
	{ "ComponentMask", 384, 64, SA_FMT_HEX, "mask" },
	{ NULL, 0, 0, 0, NULL, false },
};

/* MCMemberRecord, from the record's first byte (MAD byte 56). */
const struct sa_field sa_mcmr_fields[] = {
	{ "MGID", 0, 128, SA_FMT_MGID, "mgid" },
	{ "PortGID", 128, 128, SA_FMT_GID, "pgid" },
	{ "Q_Key", 256, 32, SA_FMT_HEX, "qkey" },
	{ "MLID", 288, 16, SA_FMT_MLID, "mlid" },
	{ "MTUSelector", 304, 2, SA_FMT_HEX, "mtusel" },
	{ "MTU", 306, 6, SA_FMT_HEX, "mtu" },
	{ "TClass", 312, 8, SA_FMT_HEX, "tclass" },
	{ "P_Key", 320, 16, SA_FMT_HEX, "pkey" },
	{ "RateSelector", 336, 2, SA_FMT_HEX, "ratesel" },
	{ "Rate", 338, 6, SA_FMT_HEX, "rate" },
	{ "PacketLifeTimeSelector", 344, 2, SA_FMT_HEX, "lifesel" },
	{ "PacketLifeTime", 346, 6, SA_FMT_HEX, "life" },
	{ "SL", 352, 4, SA_FMT_HEX, "sl" },
	{ "FlowLabel", 356, 20, SA_FMT_HEX, "flow" },
	{ "HopLimit", 376, 8, SA_FMT_HEX, "hop" },
	{ "Scope", 384, 4, SA_FMT_HEX, "scope" },
	{ "JoinState", 388, 4, SA_FMT_HEX, "join" },
	{ "ProxyJoin", 392, 1, SA_FMT_HEX, "proxy" },
	{ "Reserved", 393, 23, SA_FMT_HEX, "resv" }, /* OpenSM 3.3.23 writes ProxyJoin here */
	{ NULL, 0, 0, 0, NULL, false },
};

/* ClassPortInfo, from the attribute's first byte (MAD byte 56). */
const struct sa_field sa_cpi_fields[] = {
	{ "BaseVersion", 0, 8, SA_FMT_HEX, NULL },
	{ "ClassVersion", 8, 8, SA_FMT_HEX, NULL },
	{ "CapabilityMask", 16, 16, SA_FMT_HEX, NULL },
	{ "CapabilityMask2", 32, 27, SA_FMT_HEX, NULL },
	{ "RespTimeValue", 59, 5, SA_FMT_HEX, NULL },
	{ "RedirectGID", 64, 128, SA_FMT_GID, NULL },
	{ "RedirectTC", 192, 8, SA_FMT_HEX, NULL },
	{ "RedirectSL", 200, 4, SA_FMT_HEX, NULL },
	{ "RedirectFL", 204, 20, SA_FMT_HEX, NULL },
	{ "RedirectLID", 224, 16, SA_FMT_LID, NULL },
	{ "RedirectP_Key", 240, 16, SA_FMT_HEX, NULL },
	{ "RedirectQP", 264, 24, SA_FMT_HEX, NULL },
	{ "RedirectQ_Key", 288, 32, SA_FMT_HEX, NULL },
	{ "TrapGID", 320, 128, SA_FMT_GID, NULL },
	{ "TrapTC", 448, 8, SA_FMT_HEX, NULL },
	{ "TrapSL", 456, 4, SA_FMT_HEX, NULL },
	{ "TrapFL", 460, 20, SA_FMT_HEX, NULL },
	{ "TrapLID", 480, 16, SA_FMT_LID, NULL },
	{ "TrapP_Key", 496, 16, SA_FMT_HEX, NULL },
	{ "TrapHL", 512, 8, SA_FMT_HEX, NULL },
	{ "TrapQP", 520, 24, SA_FMT_HEX, NULL },
	{ "TrapQ_Key", 544, 32, SA_FMT_HEX, NULL },
	{ NULL, 0, 0, 0, NULL, false },
};

/**
 * sa_get_bits - read a big-endian bit field.
 * @p:     the area (a MAD, a record)
 * @bit:   IBA bit offset of the field from @p
 * @width: 1..64
 *
 * Context: pure.
 * Returns: the field [@bit, @bit + @width) as an unsigned number.
 */
uint64_t sa_get_bits(const uint8_t *p, unsigned bit, unsigned width)
{
	uint64_t v = 0;
	unsigned i;

	for (i = bit; i < bit + width; i++)
		v = v << 1 | ((p[i / 8] >> (7 - i % 8)) & 1);
	return v;
}

/**
 * sa_set_bits - write a big-endian bit field.
 * @p:     the area
 * @bit:   IBA bit offset of the field from @p
 * @width: 1..64
 * @v:     the value: its low @width bits are written, the other bits of
 *         @p are kept
 *
 * Context: pure.
 */
void sa_set_bits(uint8_t *p, unsigned bit, unsigned width, uint64_t v)
{
	unsigned i;

	for (i = 0; i < width; i++) {
		unsigned b = bit + width - 1 - i;
		uint8_t m = (uint8_t)(1u << (7 - b % 8));

		if ((v >> i) & 1)
			p[b / 8] |= m;
		else
			p[b / 8] &= (uint8_t)~m;
	}
}

/**
 * sa_field_by_key - the field of @table that a sequence file names @key.
 * @table: sa_hdr_fields, sa_mcmr_fields or sa_cpi_fields
 * @key:   the name (sa_seq.c)
 *
 * Returns: the field, or NULL.
 */
const struct sa_field *sa_field_by_key(const struct sa_field *table, const char *key)
{
	for (; table->name; table++)
		if (table->key && !strcmp(table->key, key))
			return table;
	return NULL;
}
