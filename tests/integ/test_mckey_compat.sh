#!/usr/bin/env bash
# test_mckey_compat.sh - rdma-core's own librdmacm/examples/mckey.c, compiled
# unchanged against umcast's installed headers with our tests/compat/common.c
# and linked with -lumcast, runs on loopback as two receivers and one
# send-only sender, and every receiver gets every message.  A umc-mckey
# receiver on the same group counts every message of that sender, whose
# buffer mckey never fills.
#
# mckey.c is rdma-core's code and is not part of umcast: it is taken at run
# time from $MCKEY_C, or else from an rdma-core git directory
# ($RDMA_CORE_GIT, default the local mirror).  Without it the test is
# skipped (exit 77).
#
# Env:
#   UMCAST_PREFIX   an install prefix of umcast (include/, lib*/libumcast.so)
#   UMC_BUILD_DIR   alternatively, a build tree: it is installed into a
#                   temporary prefix first (what ctest does)
#   MCKEY_C         path of mckey.c
#   RDMA_CORE_GIT   rdma-core git directory to read mckey.c from
#   CC              compiler (default cc)
#   UMC_SANITIZE    sanitizers the library was built with (address,undefined)
#   UMC_BIN         directory holding umc-mckey (default UMC_BUILD_DIR/bin)
set -u
here=$(cd "$(dirname "$0")" && pwd)
compat=$(cd "$here/../compat" && pwd)
# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"

COUNT=${COUNT:-20}
BIND=127.0.0.1		# never anything else: our traffic stays on lo
T=60			# seconds: bound on every process (mckey sleeps 3 s)

# --- the source -------------------------------------------------------------
src=$WORK/mckey.c
rdma_core_git=${RDMA_CORE_GIT:-/work/.mirror/linux-rdma+rdma-core/repo}
if [ -n "${MCKEY_C:-}" ]; then
	if [ ! -r "$MCKEY_C" ]; then
		echo "SKIP: MCKEY_C=$MCKEY_C is not readable"
		exit 77
	fi
	cp "$MCKEY_C" "$src"
elif git -C "$rdma_core_git" show HEAD:librdmacm/examples/mckey.c >"$src" 2>/dev/null; then
	echo "# mckey.c from $rdma_core_git ($(git -C "$rdma_core_git" rev-parse --short HEAD))"
else
	echo "SKIP: no mckey.c: set MCKEY_C to rdma-core's librdmacm/examples/mckey.c" \
	     "or RDMA_CORE_GIT to an rdma-core git directory"
	exit 77
fi

# --- umcast ------------------------------------------------------------------
if [ -z "${UMCAST_PREFIX:-}" ]; then
	if [ -z "${UMC_BUILD_DIR:-}" ]; then
		echo "set UMCAST_PREFIX (an install prefix) or UMC_BUILD_DIR (a build tree)"
		exit 1
	fi
	UMCAST_PREFIX=$WORK/prefix
	if ! cmake --install "$UMC_BUILD_DIR" --prefix "$UMCAST_PREFIX" >"$WORK/install.log" 2>&1; then
		fail "cmake --install $UMC_BUILD_DIR failed"
		cat "$WORK/install.log"
		summary
	fi
fi
lib=$(find "$UMCAST_PREFIX" -name 'libumcast.so' -print -quit 2>/dev/null)
if [ ! -d "$UMCAST_PREFIX/include/rdma" ] || [ -z "$lib" ]; then
	echo "no umcast headers or libumcast.so under $UMCAST_PREFIX"
	exit 1
fi
libdir=$(dirname "$lib")

# --- build mckey unchanged ---------------------------------------------------
san=()
if [ -n "${UMC_SANITIZE:-}" ]; then
	san=(-fsanitize="$UMC_SANITIZE" -fno-omit-frame-pointer)
fi
# linebuf.c makes stdout line buffered, so the "joined" line can be waited for.
if ! ${CC:-cc} -O2 -g "${san[@]}" -o "$WORK/mckey" "$src" "$compat/common.c" \
	"$compat/linebuf.c" -I"$compat" -I"$UMCAST_PREFIX/include" \
	-L"$libdir" -Wl,-rpath,"$libdir" -lumcast -lpthread \
	>"$WORK/build.log" 2>&1; then
	fail "mckey.c does not build against umcast"
	cat "$WORK/build.log"
	summary
fi
pass "mckey.c built against $UMCAST_PREFIX/include, linked with -lumcast"
if ldd "$WORK/mckey" | grep -Eq 'librdmacm|libibverbs'; then
	fail "mckey is linked with rdma-core's libraries"
fi

# --- run: two receivers, then one send-only sender -----------------------------
G=$(random_group)
MCKEY=("$WORK/mckey")
UMC_MCKEY=${UMC_BIN:-${UMC_BUILD_DIR:-$here/../../build}/bin}/umc-mckey
start r1 $T "${MCKEY[@]}" -m "$G" -b $BIND -C "$COUNT"
start r2 $T "${MCKEY[@]}" -m "$G" -b $BIND -C "$COUNT"
start r3 $T "$UMC_MCKEY" -m "$G" -b $BIND -C "$COUNT" -t 30000
wait_line r1 '^mckey: joined dgid:' 15 && wait_line r2 '^mckey: joined dgid:' 15 &&
	wait_line r3 '^mckey: joined dgid:' 15
start s1 $T "${MCKEY[@]}" -m "$G" -b $BIND -s -o -C "$COUNT"
finish s1; finish r1; finish r2; finish r3

expect_rc s1 0
expect_line s1 "initiating data transfers"
expect_line s1 "return status 0"
for r in r1 r2; do
	expect_rc $r 0
	expect_line $r "mckey: joined dgid: ::ffff:$G mlid 0x0 sl 0"
	expect_line $r "data transfers complete"
	expect_line $r "return status 0"
done
# umc-mckey as the receiver of a sender that is not umc-mckey
expect_rc r3 0
expect_line r3 "mckey: received $COUNT messages"
expect_line r3 "mckey: $COUNT messages not from umc-mckey: payload not checked"

summary
