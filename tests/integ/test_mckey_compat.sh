#!/usr/bin/env bash
# test_mckey_compat.sh - rdma-core's mckey on umcast, on loopback:
#
#  A. rdma-core's own librdmacm/examples/mckey.c, compiled unchanged
#     against umcast's installed headers with our tests/compat/common.c and
#     linked with -lumcast: two receivers and one send-only sender, every
#     receiver gets every message;
#  B. the prebuilt mckey binary (Debian's rdmacm-utils), unchanged, under
#     the installed umc-run: the same three roles;
#  C. a umc-mckey receiver counts every message of the prebuilt mckey as a
#     send-only sender, whose buffer mckey never fills (no umc-mckey marker:
#     counted, payload not checked).
#
# mckey.c is rdma-core's code and not part of umcast: it is taken at run
# time from $MCKEY_C, or else from an rdma-core git directory
# ($RDMA_CORE_GIT, default the local mirror); without it part A is skipped.
# The binary is $MCKEY_BIN (default: mckey on PATH); without it parts B and
# C are skipped.  With neither, the whole test is skipped (exit 77).
#
# A mckey receiver waits for its -C messages with no time limit: it prints
# "data transfers complete" and exits 0 only when every one arrived.
#
# Env:
#   UMCAST_PREFIX   an install prefix of umcast (include/, lib*/libumcast.so,
#                   bin/umc-run, lib/umcast/compat)
#   UMC_BUILD_DIR   alternatively, a build tree: it is installed into a
#                   temporary prefix first (what ctest does)
#   UMC_BIN         directory holding umc-mckey (ctest sets it)
#   MCKEY_C, RDMA_CORE_GIT, MCKEY_BIN   see above
#   CC              compiler (default cc)
#   UMC_SANITIZE    sanitizers the library was built with (address,undefined)
set -u
here=$(cd "$(dirname "$0")" && pwd)
compat=$(cd "$here/../compat" && pwd)
# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"
# shellcheck source=prebuilt_lib.sh
. "$here/prebuilt_lib.sh"

COUNT=${COUNT:-20}
BIND=127.0.0.1		# never anything else: our traffic stays on lo
T=60			# seconds: bound on every process (mckey sleeps 3 s)

# --- what is there to run ----------------------------------------------------
src=$WORK/mckey.c
rdma_core_git=${RDMA_CORE_GIT:-/work/.mirror/linux-rdma+rdma-core/repo}
have_src=false
if [ -n "${MCKEY_C:-}" ]; then
	if [ -r "$MCKEY_C" ]; then
		cp "$MCKEY_C" "$src" && have_src=true
	else
		echo "# MCKEY_C=$MCKEY_C is not readable"
	fi
elif git -C "$rdma_core_git" show HEAD:librdmacm/examples/mckey.c >"$src" 2>/dev/null; then
	echo "# mckey.c from $rdma_core_git ($(git -C "$rdma_core_git" rev-parse --short HEAD))"
	have_src=true
fi
mckey_bin=${MCKEY_BIN:-$(command -v mckey 2>/dev/null)}
have_bin=false
if [ -n "$mckey_bin" ] && [ -x "$mckey_bin" ]; then
	have_bin=true
fi
if ! $have_src && ! $have_bin; then
	echo "SKIP: no mckey: set MCKEY_C to rdma-core's librdmacm/examples/mckey.c" \
	     "(or RDMA_CORE_GIT to an rdma-core git directory), or install rdmacm-utils"
	exit 77
fi

# --- umcast, installed ---------------------------------------------------------
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
pc=$(find "$UMCAST_PREFIX" -name 'umcast.pc' -print -quit 2>/dev/null)
if [ -z "$pc" ]; then
	echo "no umcast.pc under $UMCAST_PREFIX"
	exit 1
fi
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
libdir=$(pkg-config --variable=libdir umcast)
UMC_RUN=$UMCAST_PREFIX/bin/umc-run

# three_roles NAME CMD... : two receivers and a send-only sender of CMD.
three_roles() {
	local name=$1 g r
	shift
	g=$(random_group)
	start "${name}r1" $T "$@" -m "$g" -b $BIND -C "$COUNT"
	start "${name}r2" $T "$@" -m "$g" -b $BIND -C "$COUNT"
	wait_line "${name}r1" '^mckey: joined dgid:' 15 &&
		wait_line "${name}r2" '^mckey: joined dgid:' 15
	start "${name}s" $T "$@" -m "$g" -b $BIND -s -o -C "$COUNT"
	finish "${name}s"; finish "${name}r1"; finish "${name}r2"

	expect_rc "${name}s" 0
	expect_line "${name}s" "initiating data transfers"
	expect_line "${name}s" "return status 0"
	for r in "${name}r1" "${name}r2"; do
		expect_rc "$r" 0
		expect_line "$r" "mckey: joined dgid: ::ffff:$g mlid 0x0 sl 0"
		expect_line "$r" "data transfers complete"
		expect_line "$r" "return status 0"
	done
}

# --- A. mckey.c built unchanged --------------------------------------------------
if $have_src; then
	echo "# A. rdma-core's mckey.c built against umcast's headers"
	san=()
	if [ -n "${UMC_SANITIZE:-}" ]; then
		san=(-fsanitize="$UMC_SANITIZE" -fno-omit-frame-pointer)
	fi
	# linebuf.c makes stdout line buffered: the "joined" line can be waited for.
	# shellcheck disable=SC2046 # pkg-config's flags, one word each
	if ! ${CC:-cc} -O2 -g "${san[@]}" -o "$WORK/mckey" "$src" "$compat/common.c" \
		"$compat/linebuf.c" -I"$compat" $(pkg-config --cflags --libs umcast) \
		-Wl,-rpath,"$libdir" -lpthread \
		>"$WORK/build.log" 2>&1; then
		fail "mckey.c does not build against umcast"
		cat "$WORK/build.log"
		summary
	fi
	pass "mckey.c built against umcast's installed headers, linked with -lumcast (pkg-config)"
	if ldd "$WORK/mckey" | grep -Eq 'librdmacm|libibverbs'; then
		fail "mckey is linked with rdma-core's libraries"
	fi
	three_roles A "$WORK/mckey"
else
	echo "# A. skipped: no mckey.c"
fi

# --- B. and C. the prebuilt binary under umc-run -----------------------------------
if $have_bin; then
	echo "# B. prebuilt $mckey_bin under $UMC_RUN"
	if ! readelf -d "$mckey_bin" | grep -q 'NEEDED.*librdmacm.so.1'; then
		fail "$mckey_bin is not linked with librdmacm.so.1"
	fi
	prebuilt_env
	# stdbuf: the prebuilt mckey's stdout is line buffered, for wait_line.
	MCKEY=("$UMC_RUN" stdbuf -oL "$mckey_bin")
	three_roles B "${MCKEY[@]}"
	if ! grep -q 'librdmacm.so.1 => .*/umcast/compat/' <("$UMC_RUN" ldd "$mckey_bin"); then
		fail "umc-run does not give $mckey_bin the drop-in librdmacm.so.1"
	fi

	echo "# C. a umc-mckey receiver, the prebuilt mckey as send-only sender"
	G=$(random_group)
	start Cr $T "${UMC_BIN:?UMC_BIN is set by ctest}/umc-mckey" -m "$G" -b $BIND -C "$COUNT"
	wait_line Cr '^mckey: joined dgid:' 15
	start Cs $T "${MCKEY[@]}" -m "$G" -b $BIND -s -o -C "$COUNT"
	finish Cs; finish Cr
	expect_rc Cs 0
	expect_line Cs "return status 0"
	expect_rc Cr 0
	expect_line Cr "mckey: received $COUNT messages"
	expect_line Cr "mckey: $COUNT messages not from umc-mckey: payload not checked"
	expect_line Cr "data transfers complete"
else
	echo "# B., C. skipped: no prebuilt mckey"
fi

summary
