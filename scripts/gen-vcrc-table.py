#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen-vcrc-table.py - write src/wire/ib_vcrc_table.h, the slice-by-8 tables
of the InfiniBand VCRC (IBA Vol 1 7.8.2: CRC-16, polynomial 0x100B,
processed bit-reflected as 0xD008, register initialised to 0xFFFF).

Table k, entry b, is the register that byte b followed by k zero bytes
leaves when fed into a zero register, so that umc_vcrc_update() can fold
eight bytes with eight independent lookups.  tests/unit/test_wire_ib.c
checks every entry against the bitwise definition.  Run after changing it:

    scripts/gen-vcrc-table.py > src/wire/ib_vcrc_table.h
"""

POLY_REFL = 0xD008
SLICES = 8


def step_byte(reg):
    """Eight bit steps of the reflected CRC over what the register holds."""
    for _ in range(8):
        reg = (reg >> 1) ^ POLY_REFL if reg & 1 else reg >> 1
    return reg


def main():
    t = [[step_byte(b) for b in range(256)]]
    for k in range(1, SLICES):
        t.append([t[0][v & 0xFF] ^ (v >> 8) for v in t[k - 1]])
    out = [
        "/* SPDX-License-Identifier: MIT */",
        "/*",
        " * ib_vcrc_table.h - the VCRC's slice-by-8 tables (IBA 7.8.2), written by",
        " * scripts/gen-vcrc-table.py: umc_vcrc_tab[k][b] is the register that",
        " * byte b followed by k zero bytes leaves in a zero register (reflected",
        " * polynomial 0xD008).  Do not edit; regenerate.",
        " */",
        "#ifndef UMC_WIRE_IB_VCRC_TABLE_H",
        "#define UMC_WIRE_IB_VCRC_TABLE_H",
        "",
        "#include <stdint.h>",
        "",
        "static const uint16_t umc_vcrc_tab[%d][256] = {" % SLICES,
    ]
    for k in range(SLICES):
        out.append("\t{")
        for i in range(0, 256, 8):
            out.append("\t\t" + " ".join("0x%04x," % v for v in t[k][i:i + 8]))
        out.append("\t},")
    out += ["};", "", "#endif /* UMC_WIRE_IB_VCRC_TABLE_H */"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
