#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/footprint.sh - what one event-driven round trip costs the pong in
# user space, in counts that need no hardware counters and do not drift
# with the machine's speed as wall-clock times do: the instructions it
# runs (valgrind's callgrind) and the distinct 64-byte lines, and 4 KiB
# pages, of code and of data they touch (valgrind's lackey, read by
# bench/lackey-lines.c).  After a sleep the caches and branch predictors
# are cold, so the lines touched are what a woken side may have to fetch
# again, and the pages what its TLB may have to walk again (bench/README.md,
# "Where an event-driven round trip goes").
#
# For umcast (umc-perf -e) and raw UDP with RoCEv2's datagram shape woken
# through an epoll set (udp-perf -E -G -e), SIZE bytes: the pong runs under
# callgrind for N1 and N2 round trips, and the difference of the totals
# over N2 - N1 is the instructions per round trip; then under lackey for
# N2, where, after the instructions of the N1 run (start-up and N1 round
# trips), (N2 - N1) / 2 windows of one round trip's instructions each are
# counted.  The ping runs natively on the other CPU.  umcast's background
# receive thread is off (UMC_RX_THREAD=0) on both ends: under valgrind its
# share of the instructions changes from run to run by up to 15 %, and a
# program woken by its channel does not wait for it.  Counted: the
# application, the library, libc and ISA-L; not the kernel.
#
# Usage: bench/footprint.sh   (after bench/run.sh, or with BUILD= a build
# that has bin/umc-perf, bin/udp-perf and bin/lackey-lines); SIZE (64),
# N1 (1000), N2 (3000).  Needs valgrind; enters a private network
# namespace as bench/run.sh does.  Takes under a minute.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
SIZE=${SIZE:-64}
N1=${N1:-1000}
N2=${N2:-3000}
BIN=$BUILD/bin
# shellcheck source=bench/netns.sh
. "$ROOT/bench/netns.sh"

for b in umc-perf udp-perf lackey-lines; do
	[ -x "$BIN/$b" ] || { echo "footprint: no $BIN/$b (run bench/run.sh first)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "footprint: valgrind is not installed" >&2; exit 1; }
[ "$((N2 - N1))" -ge 2 ] || { echo "footprint: N2 must be at least N1 + 2" >&2; exit 2; }
if [ -z "${UMC_BENCH_INNER:-}" ]; then
	bench_netns_enter "-n -rn" "${BASH_SOURCE[0]}" "$@"
	echo "footprint: no private network namespace (needs unshare -n)" >&2
	exit 1
fi
bench_netns_lo mcast

TMP=$(mktemp -d /tmp/umc-footprint.XXXXXX)
JOBS=()
cleanup() {
	for p in "${JOBS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT
NCPU=$(nproc)
cpu() { if [ "$NCPU" -ge 2 ]; then echo "taskset -c $1"; fi; }

declare -A TOOL=([umcast]=umc-perf [udpEG]=udp-perf)
declare -A ARGS=([umcast]="-e" [udpEG]="-E -G -e")
declare -A GROUP=([umcast]=239.10.0.1 [udpEG]=239.10.7.1)
export UMC_RX_THREAD=0 # umcast's; udp-perf has none

fail() { # fail MESSAGE FILE: say what failed, with the end of FILE (valgrind's own lines left out)
	echo "footprint: $1: $(grep -v '^==[0-9]*==' "$2" 2>/dev/null | tail -3)" >&2
	exit 1
}

# pingpong TRANSPORT N VALGRIND-ARGS...: N round trips, the pong under
# valgrind with those arguments (its messages in $TMP/pong.err).
pingpong() {
	local t=$1 n=$2 vp b
	shift 2
	rm -f "$TMP/ready"
	mkfifo "$TMP/ready"
	# shellcheck disable=SC2086,SC2046
	$(cpu 1) valgrind "$@" "$BIN/${TOOL[$t]}" ${ARGS[$t]} -L pong -m "${GROUP[$t]}" -S "$SIZE" \
		-B 64 -I 3000 -T 120000 -R 9 9>"$TMP/ready" >/dev/null 2>"$TMP/pong.err" &
	vp=$!
	JOBS+=("$vp")
	b=$(head -c1 "$TMP/ready") # umc-perf and udp-perf write 'R'
	[ "$b" = R ] || fail "$t pong did not start" "$TMP/pong.err"
	# shellcheck disable=SC2086,SC2046
	$(cpu 0) "$BIN/${TOOL[$t]}" ${ARGS[$t]} -L ping -m "${GROUP[$t]}" -S "$SIZE" -B 64 \
		-n "$n" -w 100 >/dev/null 2>"$TMP/ping.err" || fail "$t ping failed" "$TMP/ping.err"
	wait "$vp" || fail "$t pong failed" "$TMP/pong.err"
}

# instructions TRANSPORT N: set INSNS to the pong's instruction total for N round trips
instructions() {
	rm -f "$TMP/cg.out"
	pingpong "$1" "$2" --tool=callgrind --callgrind-out-file="$TMP/cg.out"
	INSNS=$(sed -n 's/^summary: *//p' "$TMP/cg.out")
	[ -n "$INSNS" ] || fail "$1: no callgrind total" "$TMP/pong.err"
}

echo "# user space of an event-driven $SIZE-byte pong, per round trip (valgrind; N1=$N1, N2=$N2)"
windows=$(((N2 - N1) / 2))
for t in umcast udpEG; do
	instructions "$t" "$N1"
	i1=$INSNS
	instructions "$t" "$N2"
	per=$(((INSNS - i1) / (N2 - N1)))
	[ "$per" -gt 0 ] || fail "$t: $per instructions per round trip" "$TMP/pong.err"
	rm -f "$TMP/trace"
	mkfifo "$TMP/trace" # the trace is gigabytes: read it as it is written
	"$BIN/lackey-lines" "$i1" "$per" "$windows" <"$TMP/trace" >"$TMP/lines" 2>"$TMP/lines.err" &
	lp=$!
	JOBS+=("$lp")
	pingpong "$t" "$N2" --tool=lackey --trace-mem=yes --log-file="$TMP/trace"
	wait "$lp" || fail "$t: lackey-lines failed" "$TMP/lines.err"
	grep -q " windows=$windows\$" "$TMP/lines" ||
		fail "$t: the trace held fewer windows than $windows" "$TMP/lines"
	echo "$t instructions=$per $(cat "$TMP/lines")"
done
