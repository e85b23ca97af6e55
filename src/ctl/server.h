/* SPDX-License-Identifier: MIT */
/*
 * server.h - the library's side of umc-ctl(1) and umc-stat(1) (server.c):
 * its counters file, UMC_FAULTS and the control thread, started at the
 * process's first use of a device.
 */
#ifndef UMC_CTL_SERVER_H
#define UMC_CTL_SERVER_H

struct umc_device;

/*
 * umc_ctl_lib_start - the run directory, the counters file, the rules of
 * UMC_FAULTS (a malformed SPEC: one line on stderr, nothing injected) and
 * the control thread; again in a child of fork.  Never fails: without a
 * private directory the counters are kept in memory and there is no
 * control socket (one line on stderr says why).
 * Context: the first probe, device list lock held, before any device.
 */
void umc_ctl_lib_start(void);

/*
 * umc_ctl_dev_added - a device was registered: its record shows its port,
 * which its port events keep up to date.  Context: umc_dev_register.
 */
void umc_ctl_dev_added(struct umc_device *dev);

#endif /* UMC_CTL_SERVER_H */
