#!/usr/bin/env bash
# test_install.sh - a source install, as the README tells a user to make
# and to remove it:
#
#  1. nothing it installs has the path of a file of rdma-core's packages
#     (those installed here: libibverbs-dev, librdmacm-dev, ... by dpkg -L,
#     /usr read as the prefix), nothing lies in include/ but umcast/, no
#     library in lib/ is named like rdma-core's, and the functions' pages
#     are in section 3umcast, not 3;
#  2. a program builds with `pkg-config --cflags --libs umcast` alone (the
#     README's examples/hello_mcast.c: <rdma/rdma_cma.h> comes from
#     include/umcast), runs from the prefix's libumcast.so.1, and its
#     receiver gets what its send-only sender sends (test_example.sh);
#  3. `make uninstall` removes every file it installed, and umcast's own
#     directories.
#
# Env: UMC_BUILD_DIR, UMC_SOURCE_DIR (ctest sets both), CC, UMC_SANITIZE.
set -u
build=${UMC_BUILD_DIR:?UMC_BUILD_DIR is set by ctest}
src=${UMC_SOURCE_DIR:?UMC_SOURCE_DIR is set by ctest}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=check_lib.sh
. "$here/check_lib.sh"

# The default component is every install() rule; its manifest,
# install_manifest_Unspecified.txt, is this test's alone (the other tests'
# installs write install_manifest.txt).
prefix=$work/prefix
manifest=$build/install_manifest_Unspecified.txt
install_to "$prefix" --component Unspecified
(cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort) >"$work/ours"
[ "$(wc -l <"$work/ours")" -ge 50 ] || bad "only $(wc -l <"$work/ours") files installed"

# 1. no collision with rdma-core
pkgs=$(dpkg-query -W -f='${Package} ${Status}\n' libibverbs-dev librdmacm-dev libibverbs1 \
	librdmacm1 ibverbs-providers ibverbs-utils rdmacm-utils rdma-core 2>/dev/null |
	awk '/ installed$/ {print $1}')
if [ -n "$pkgs" ]; then
	# shellcheck disable=SC2086 # one word per package
	dpkg -L $pkgs | sed -n 's|^/usr/||p' | sed 's/\.gz$//' | sort -u >"$work/theirs"
	both=$(comm -12 "$work/ours" "$work/theirs")
	if [ -z "$both" ]; then
		ok "no path of $(wc -l <"$work/ours") is one of rdma-core's ($(echo $pkgs))"
	else
		bad "installed where rdma-core's packages install:" $both
	fi
else
	echo "# rdma-core's packages are not installed: their file lists not compared"
fi
other=$(grep -E '^include/' "$work/ours" | grep -v '^include/umcast/')
[ -z "$other" ] && ok "every header is under include/umcast" || bad "headers outside include/umcast:" $other
grep -q '^include/umcast/rdma/rdma_cma.h$' "$work/ours" || bad "no include/umcast/rdma/rdma_cma.h"
libs=$(grep -E '^lib[^/]*/(lib(ibverbs|rdmacm)[.])' "$work/ours")
[ -z "$libs" ] && ok "no library on the linker's path is named like rdma-core's" ||
	bad "rdma-core's library names on the linker's path:" $libs
man3=$(grep -E '^share/man/man3/' "$work/ours")
if [ -n "$man3" ] && [ -z "$(grep -v '\.3umcast$' <<<"$man3")" ]; then
	ok "$(wc -l <<<"$man3") function pages, every one in section 3umcast"
else
	bad "man3 pages outside section 3umcast:" "$(grep -v '\.3umcast$' <<<"$man3")"
fi

# 2. a program built with pkg-config alone
pcdir=$(dirname "$(grep -m1 '/pkgconfig/umcast\.pc$' "$work/ours")")
export PKG_CONFIG_PATH=$prefix/$pcdir
cflags=$(pkg-config --cflags umcast) libs=$(pkg-config --libs umcast)
libdir=$(pkg-config --variable=libdir umcast)
if [ "$(cd "$(pkg-config --variable=includedir umcast)" && pwd -P)" = "$(cd "$prefix/include/umcast" && pwd -P)" ]; then
	ok "pkg-config --cflags umcast: $cflags"
else
	bad "pkg-config's includedir is not $prefix/include/umcast: $cflags"
fi
san=()
[ -n "${UMC_SANITIZE:-}" ] && san=(-fsanitize="$UMC_SANITIZE" -fno-omit-frame-pointer)
mkdir -p "$work/bin"
# shellcheck disable=SC2086 # pkg-config's words
if ${CC:-cc} -O2 "${san[@]}" -o "$work/bin/hello_mcast" "$src/examples/hello_mcast.c" \
	$cflags $libs -Wl,-rpath,"$libdir" >"$work/cc.log" 2>&1; then
	ok "examples/hello_mcast.c built with pkg-config's flags"
	lib=$(ldd "$work/bin/hello_mcast" | awk '$1 == "libumcast.so.1" {print $3}')
	if [ "$(readlink -f "$lib")" = "$(readlink -f "$libdir/libumcast.so.1")" ]; then
		ok "it runs with the prefix's libumcast.so.1"
	else
		bad "it loads libumcast.so.1 from '$lib'"
	fi
	if UMC_BIN=$work/bin bash "$here/test_example.sh" >"$work/example.log" 2>&1; then
		ok "its receiver got its send-only sender's message"
	else
		bad "hello_mcast recv/send:"
		cat "$work/example.log"
	fi
else
	bad "examples/hello_mcast.c does not build with pkg-config's flags:"
	cat "$work/cc.log"
fi

# 3. make uninstall
if make -s -C "$src" uninstall BUILD="$build" MANIFEST="$manifest" >"$work/uninstall.log" 2>&1; then
	left=$(cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||')
	dirs=$(cd "$prefix" && find . -type d -path '*umcast*')
	if [ -z "$left" ] && [ -z "$dirs" ]; then
		ok "make uninstall removed all $(wc -l <"$work/ours") files and umcast's directories"
	else
		bad "make uninstall left:" $left $dirs
	fi
else
	bad "make uninstall failed:"
	cat "$work/uninstall.log"
fi

summary
