/* SPDX-License-Identifier: MIT */
/*
 * umc_be_types.h - kernel-style field types used by the umcast headers:
 * __u8, __u64 and the big-endian ("network order") __be16/__be32/__be64.
 * On Linux they come from the kernel's UAPI header, as with rdma-core, so a
 * program that also includes <linux/types.h> sees a single definition;
 * elsewhere they are plain fixed-width types.
 */
#ifndef UMC_BE_TYPES_H
#define UMC_BE_TYPES_H

#include <stdint.h>

#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/types.h>)
#include <linux/types.h>
#define UMC_BE_TYPES_FROM_LINUX 1
#endif
#endif
#ifndef UMC_BE_TYPES_FROM_LINUX
typedef uint8_t __u8;
typedef uint64_t __u64;
typedef uint16_t __be16;
typedef uint32_t __be32;
typedef uint64_t __be64;
#endif

#endif /* UMC_BE_TYPES_H */
