/* SPDX-License-Identifier: MIT */
/*
 * stage.h - injected faults where each link meets the core, the same for
 * both links (umc-faults(7)): on receive between a link's burst and
 * delivery, on send between the posted work requests and the link's
 * encoding, and in the SA client's transactions.  The rules are fault.h's;
 * this is where they act on datagrams, devices and time.
 *
 * With no rule and nothing held, a device's data path tests one flag per
 * burst (umc_fault_on, umc_int.h) and does nothing else.
 */
#ifndef UMC_FAULT_STAGE_H
#define UMC_FAULT_STAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault/fault.h"
#include "sa/sa_client.h"

struct umc_device;
struct umc_qp;
struct umc_rx_pkt;
struct umc_tx_pkt;

enum {
	UMC_FAULT_HOLD_MAX = 1024,	 /* datagrams one device holds back (delay, reorder) */
	UMC_FAULT_REORDER_MAX_US = 100000, /* a held datagram goes this long after its last peer */
};

/*
 * umc_fault_set - put the rules of @text in force on every device (and on
 * those found later), with its seed or, without one, a random seed that
 * the canonical text then names.  Datagrams held back by the old rules
 * go on as they were decided.
 * @text:    a SPEC; "" clears the rules
 * @devices: also on the devices there are now (false: at start-up, before
 *           the first probe, which must not be waited for)
 * @canon:   the rules now in force, canonical with their seed ("" for
 *           none; may be NULL)
 * @err:     on -EINVAL or -E2BIG, the one line saying where and why
 *
 * Context: takes every device's rx_lock and fault lock in turn; not under
 * any library lock.
 * Returns: 0, -EINVAL or -E2BIG (nothing changed), -ENOMEM.
 */
int umc_fault_set(const char *text, bool devices, char *canon, size_t canon_size,
		  char err[UMC_FAULT_ERR_MAX]);

/* umc_fault_wake_fd - an eventfd readable when a held datagram's time may be sooner (-1: none yet). */
int umc_fault_wake_fd(void);

/*
 * umc_fault_dev_init - a new device takes the rules in force.
 * Context: umc_dev_register (the device list lock held).
 */
void umc_fault_dev_init(struct umc_device *dev);

/*
 * The engine's delivery of one packet to the QPs @filter names: 0 every
 * QP it goes to; +N only QPN N; -N every one but N (a rule with qpn= acts
 * on that QP's copy of a group's datagram).
 */
typedef void (*umc_fault_deliver_fn)(struct umc_device *dev, const struct umc_rx_pkt *pkt,
				     int32_t filter);

/*
 * umc_fault_rx - the receive stage: @n packets @dev's link just read go to
 * @deliver as the rules say: lost, duplicated, held back, or as they are.
 * Packets held back are copied: nothing refers to the link's buffers or
 * lent receives once this returns.  First delivers what was held and is
 * due.  Context: dev->rx_lock held.
 */
void umc_fault_rx(struct umc_device *dev, const struct umc_rx_pkt *pkts, int n,
		  umc_fault_deliver_fn deliver);

/*
 * umc_fault_rx_due - deliver what @dev holds back and is due (the engine's
 * pass calls it first, so held datagrams come out even when nothing
 * arrives).  Context: dev->rx_lock held.
 */
void umc_fault_rx_due(struct umc_device *dev, umc_fault_deliver_fn deliver);

/*
 * umc_fault_tx - the send stage: @n packets @qp posted go to the link's
 * xmit as the rules say: lost, with a bit of their ICRC flipped
 * (pkt->corrupt, which the link honours after computing it), duplicated,
 * or held back (copied, payload and address handle, and sent later on
 * the same QP).  Context: qp->sq_lock held.
 */
void umc_fault_tx(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n);

/*
 * umc_fault_qp_gone - @qp is destroyed: what it holds back is dropped.
 * Context: dev->lock held (the QP is leaving the device's list).
 */
void umc_fault_qp_gone(struct umc_qp *qp);

/*
 * umc_fault_sa - the SA stage (umc_sa_open_args.fault, for the port of
 * device @dev): what becomes of SA request @mad (UMC_MAD_SIZE bytes) about
 * to be sent, for the first time when @first.  Only joins (MCMemberRecord
 * SubnAdmSet) are acted on: reject= answers the first send with *@status,
 * timeout lets no send out, drop= and drop_nth= decide for every send.
 * Context: the SA client's lock held; takes the device's fault lock.
 */
enum umc_sa_fault umc_fault_sa(void *dev, const uint8_t *mad, bool first, uint16_t *status);

/*
 * umc_fault_port_down - umc-ctl port-down: while @down, @dev neither sends
 * nor receives (counted fault_port_down).  Context: no library lock held.
 */
void umc_fault_port_down(struct umc_device *dev, bool down);

/*
 * umc_fault_tick - release what is due on every device at @now_us
 * (CLOCK_MONOTONIC, microseconds): held receives are delivered (the
 * engine runs), held sends sent.  Returns when the next one is due
 * (UINT64_MAX: none).  Context: the control thread, no lock held.
 */
uint64_t umc_fault_tick(uint64_t now_us);

/* umc_fault_now_us - CLOCK_MONOTONIC in microseconds, the stage's clock. */
uint64_t umc_fault_now_us(void);

#endif /* UMC_FAULT_STAGE_H */
