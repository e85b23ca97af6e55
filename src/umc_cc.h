/* SPDX-License-Identifier: MIT */
/*
 * umc_cc.h - the compiler hints of the library.
 *
 * umc_likely / umc_unlikely: branch hints for the rare paths of the data
 * path (a bad packet, a full queue).
 *
 * UMC_HOT marks a function that runs for every packet: the receive engine
 * and the links' receive and send bursts, the codecs they call, posting,
 * polling and the completion channel's event.  GCC puts such functions
 * in .text.hot, which the linker lays out before the rest of .text (other
 * compilers may take the mark as a hint only), so the library's code of a
 * packet lies on a few adjacent pages instead of being spread over it in
 * source order.  A thread woken by a datagram fetches the path's code
 * again after its sleep: a woken round trip touches fewer pages of code,
 * and its user time from the receive to the send is shorter (the figures:
 * bench/README.md, "Pages, code layout and prefetching").  The set is what callgrind shows
 * a 64-byte ping-pong on RoCEv2 running once or more per round trip,
 * busy-polling and event-driven, with the InfiniBand link's counterparts.
 * A function that every build inlines needs no mark; one in another file
 * than its caller is not inlined without link-time optimization.
 */
#ifndef UMC_CC_H
#define UMC_CC_H

#define umc_likely(x) __builtin_expect(!!(x), 1)
#define umc_unlikely(x) __builtin_expect(!!(x), 0)

#define UMC_HOT __attribute__((hot))

#endif /* UMC_CC_H */
