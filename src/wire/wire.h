/* SPDX-License-Identifier: MIT */
/*
 * wire.h - every wire codec of umcast: the shared transport headers
 * (transport.h), the CRCs (crc.h), the RoCEv2 layer (roce.h), the
 * InfiniBand link headers (ib.h) and datagrams in pieces (sg.h).
 * Nothing here does I/O or keeps global state.
 */
#ifndef UMC_WIRE_H
#define UMC_WIRE_H

#include "wire/crc.h"
#include "wire/ib.h"
#include "wire/roce.h"
#include "wire/sg.h"
#include "wire/transport.h"

#endif /* UMC_WIRE_H */
