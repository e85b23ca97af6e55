# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# bench/netns.sh - what the bench scripts share: their Release build and
# the private network namespace they run in (bench/run.sh, rx-instr.sh,
# footprint.sh, sm-bench.sh, join-storm.sh and fwd-bench.sh source it).
#
# UMC_BENCH_INNER says where a script runs: unset before it has chosen,
# "netns" in the namespace it executed itself again in, "host" when it
# runs in the current one.  A script run from another (sm-bench.sh from
# run.sh) inherits it, and so neither builds nor enters a namespace again.

# bench_netns_enter FLAGS SCRIPT [ARG...]: execute bash SCRIPT ARG... again
# under the first of `unshare FLAG` (FLAGS: e.g. "-n -rn"; -n as root, -rn
# as a user with user namespaces) that works, with UMC_BENCH_INNER=netns.
# Returns only when none does; the caller chooses what follows.
bench_netns_enter() {
	local flags=$1 script=$2 f
	shift 2
	for f in $flags; do
		if unshare "$f" true 2>/dev/null; then
			printf '%s\n' "== running in a private network namespace (unshare $f)" >&2
			exec unshare "$f" env UMC_BENCH_INNER=netns bash "$script" "$@"
		fi
	done
}

# bench_netns_lo [mcast]: in that namespace (UMC_BENCH_INNER=netns), bring
# lo up and, with "mcast", route 224.0.0.0/4 to it (src 127.0.0.1), so no
# datagram and no IGMP report can leave the machine; again in a script run
# from another (join-storm.sh from run.sh) changes nothing.  Elsewhere
# nothing.
# shellcheck disable=SC2120 # its one argument is optional
bench_netns_lo() {
	[ "${UMC_BENCH_INNER:-}" = netns ] || return 0
	ip link set lo up
	if [ "${1:-}" = mcast ]; then
		ip route replace 224.0.0.0/4 dev lo src 127.0.0.1
	fi
}

# bench_configure NAME: configure a Release build without the tests in
# $BUILD from the sources in $ROOT (both the caller's); cmake's output goes
# to $BUILD/NAME-cmake.log, shown whole when it fails.  Returns 1 then.
bench_configure() {
	printf '%s\n' "== building (Release) into $BUILD" >&2
	mkdir -p "$BUILD"
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DUMC_TESTS=OFF \
		>"$BUILD/$1-cmake.log" 2>&1 || { cat "$BUILD/$1-cmake.log" >&2; return 1; }
}

# bench_make NAME TARGET...: build TARGETs in $BUILD, configured already;
# the output goes to $BUILD/NAME-build.log, whose last 40 lines are shown
# when it fails.  Returns 1 then.
bench_make() {
	local name=$1
	shift
	cmake --build "$BUILD" -j"$(nproc)" --target "$@" >"$BUILD/$name-build.log" 2>&1 ||
		{ tail -40 "$BUILD/$name-build.log" >&2; return 1; }
}

# bench_build NAME TARGET...: bench_configure NAME, then bench_make NAME
# TARGET..., unless NO_BUILD=1 (a script run from another, or a build
# made already).  Returns 1 when either fails.
bench_build() {
	[ "${NO_BUILD:-0}" = 1 ] && return 0
	bench_configure "$1" && bench_make "$@"
}
