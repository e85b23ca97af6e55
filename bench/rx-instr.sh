#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/rx-instr.sh - the user-space instructions umcast's receiver spends
# per datagram (valgrind's callgrind), a count that does not drift with the
# machine's speed as wall-clock rates do.
#
# A umc-perf receiver runs under callgrind and is stopped (SIGSTOP) as soon
# as it has joined and posted its receives; a sender then sends N datagrams
# of SIZE bytes, which wait in the group socket's buffer; the receiver is
# continued and drains them in full bursts (64 per recvmmsg), as a
# receiver that has fallen behind does.  Two runs, N1 and N2 datagrams: the
# difference of their instruction totals over N2 - N1 leaves out start-up
# and exit.  Counted: the application, libumcast, libc and ISA-L in user
# space; not the kernel.
#
# Usage: bench/rx-instr.sh   (after bench/run.sh, or with BUILD= a build
# that has bin/umc-perf); SIZES ("64 1024"), N2 (1500; at most what 4 MiB
# of socket buffer holds at the largest size), N1 (N2 / 3), REPS (3: the
# median is printed, then every value; they spread by about 2 %).  Needs
# valgrind; enters a private network namespace as bench/run.sh does.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
SIZES=${SIZES:-"64 1024"}
N2=${N2:-1500}
N1=${N1:-$((N2 / 3))}
REPS=${REPS:-3}
BIN=$BUILD/bin
GROUP=239.10.0.1
# shellcheck source=bench/netns.sh
. "$ROOT/bench/netns.sh"

[ -x "$BIN/umc-perf" ] || { echo "rx-instr: no $BIN/umc-perf (run bench/run.sh first)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "rx-instr: valgrind is not installed" >&2; exit 1; }
if [ -z "${UMC_BENCH_INNER:-}" ]; then
	bench_netns_enter "-n -rn" "${BASH_SOURCE[0]}" "$@"
	echo "rx-instr: no private network namespace (needs unshare -n)" >&2
	exit 1
fi
bench_netns_lo mcast

TMP=$(mktemp -d /tmp/umc-rx-instr.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkfifo "$TMP/ready"

# once SIZE N -> "received lost instructions" of one stopped-then-drained receiver
once() {
	local size=$1 n=$2 vp
	valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" "$BIN/umc-perf" -m $GROUP \
		-S "$size" -B 64 -d 8192 -I 3000 -T 20000 -R 9 9>"$TMP/ready" >"$TMP/r.out" 2>"$TMP/r.err" &
	vp=$!
	head -c1 "$TMP/ready" >/dev/null
	kill -STOP "$vp"
	"$BIN/umc-perf" -s -o -m $GROUP -S "$size" -B 64 -n "$n" >/dev/null
	sleep 0.2 # the last datagrams reach the socket
	kill -CONT "$vp"
	wait "$vp"
	local msgs lost ir
	msgs=$(sed -n 's/^result .* msgs=\([0-9]*\).*/\1/p' "$TMP/r.out")
	lost=$(sed -n 's/^result .* lost=\([0-9]*\).*/\1/p' "$TMP/r.out")
	ir=$(sed -n 's/^summary: *//p' "$TMP/cg.out")
	echo "${msgs:-0} ${lost:-?} ${ir:-0}"
}

echo "# user-space instructions per received datagram (callgrind, bursts of 64; median of $REPS)"
for size in $SIZES; do
	vals=()
	for ((k = 0; k < REPS; k++)); do
		read -r m1 l1 i1 < <(once "$size" "$N1")
		read -r m2 l2 i2 < <(once "$size" "$N2")
		if [ "$l1" != 0 ] || [ "$l2" != 0 ] || [ "$m2" -le "$m1" ]; then
			echo "rx-instr: size $size: lost $l1/$l2 of $m1/$m2 (socket buffer too small for N2?)" >&2
			exit 1
		fi
		vals+=($(((i2 - i1) / (m2 - m1))))
	done
	echo "rx_instr_per_datagram_$size $(printf '%s\n' "${vals[@]}" | sort -n | sed -n "$(((REPS + 1) / 2))p") (${vals[*]})"
done
