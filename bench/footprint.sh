#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/footprint.sh - what one event-driven round trip costs the pong in
# user space, in counts that do not drift with the machine's speed: the
# instructions it runs (valgrind's callgrind) and the distinct 64-byte
# lines of code and of data it touches (valgrind's lackey, read by
# bench/lackey-lines.c).  After a sleep the caches and branch predictors
# are cold, so each line touched is fetched again: the lines, more than
# the instructions, are what a woken side's user time is made of
# (bench/README.md, "Where an event-driven round trip goes").
#
# For umcast (umc-perf -e) and raw UDP with RoCEv2's datagram shape woken
# through an epoll set (udp-perf -E -G -e), SIZE bytes: the pong runs under
# callgrind for N1 and N2 round trips, and the difference of the totals
# over N2 - N1 is the instructions per round trip; then under lackey for
# N2, where after the instructions of the N1 run (start-up and N1 round
# trips) every window of one round trip's instructions is counted.  The
# ping runs natively on the other CPU.  Counted: the application, the
# library, libc and ISA-L (all threads of the pong); not the kernel.
#
# Usage: bench/footprint.sh   (after bench/run.sh, or with BUILD= a build
# that has bin/umc-perf, bin/udp-perf and bin/lackey-lines); SIZE (64),
# N1 (1000), N2 (3000).  Needs valgrind; enters a private network
# namespace as bench/run.sh does.  Takes about three minutes.
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
[ "$N2" -gt "$N1" ] || { echo "footprint: N2 must be larger than N1" >&2; exit 2; }
if [ -z "${UMC_BENCH_INNER:-}" ]; then
	bench_netns_enter "-n -rn" "${BASH_SOURCE[0]}" "$@"
	echo "footprint: no private network namespace (needs unshare -n)" >&2
	exit 1
fi
bench_netns_lo mcast

TMP=$(mktemp -d /tmp/umc-footprint.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
NCPU=$(nproc)
cpu() { if [ "$NCPU" -ge 2 ]; then echo "taskset -c $1"; fi; }

declare -A TOOL=([umcast]=umc-perf [udpEG]=udp-perf)
declare -A ARGS=([umcast]="-e" [udpEG]="-E -G -e")
declare -A GROUP=([umcast]=239.10.0.1 [udpEG]=239.10.7.1)

# pingpong TRANSPORT N VALGRIND-ARGS...: N round trips, the pong under
# valgrind with those arguments; its valgrind output goes to $TMP/vg.out.
pingpong() {
	local t=$1 n=$2 vp
	shift 2
	rm -f "$TMP/ready"
	mkfifo "$TMP/ready"
	# shellcheck disable=SC2086,SC2046
	$(cpu 1) valgrind "$@" "$BIN/${TOOL[$t]}" ${ARGS[$t]} -L pong -m "${GROUP[$t]}" -S "$SIZE" \
		-B 64 -I 3000 -T 120000 -R 9 9>"$TMP/ready" >/dev/null 2>"$TMP/pong.err" &
	vp=$!
	head -c1 "$TMP/ready" >/dev/null
	# shellcheck disable=SC2086,SC2046
	if ! $(cpu 0) "$BIN/${TOOL[$t]}" ${ARGS[$t]} -L ping -m "${GROUP[$t]}" -S "$SIZE" -B 64 \
		-n "$n" -w 100 >"$TMP/ping.out" 2>"$TMP/ping.err"; then
		echo "footprint: $t ping failed: $(tail -2 "$TMP/ping.err")" >&2
		exit 1
	fi
	wait "$vp"
}

# instructions TRANSPORT N: the pong's instruction total for N round trips
instructions() {
	pingpong "$1" "$2" --tool=callgrind --callgrind-out-file="$TMP/cg.out"
	sed -n 's/^summary: *//p' "$TMP/cg.out"
}

echo "# user space of an event-driven $SIZE-byte pong, per round trip (valgrind; N1=$N1, N2=$N2)"
for t in umcast udpEG; do
	i1=$(instructions "$t" "$N1")
	i2=$(instructions "$t" "$N2")
	per=$(((i2 - i1) / (N2 - N1)))
	rm -f "$TMP/trace"
	mkfifo "$TMP/trace" # the trace is gigabytes: read it as it is written
	"$BIN/lackey-lines" "$i1" "$per" $(((N2 - N1) / 2)) <"$TMP/trace" >"$TMP/lines" &
	lp=$!
	pingpong "$t" "$N2" --tool=lackey --trace-mem=yes --log-file="$TMP/trace"
	wait "$lp" || { echo "footprint: $t: lackey-lines failed" >&2; exit 1; }
	echo "$t instructions=$per $(cat "$TMP/lines")"
done
