#!/usr/bin/env bash
# bench/fwd-bench.sh - the InfiniBand link's unicast forwarding (umc-sm
# --forwarding unicast, issue 34): what it costs a sender per member, and
# the window in which a new member misses messages.
#
#   bench/fwd-bench.sh                      build (Release, build-bench/) and measure
#   REPS=3 DUR=0.5 MEMBERS="1 4 16" bench/fwd-bench.sh
#
# 1. The sender's message rate: umc-perf -s -o (send-only, 64-byte
#    messages, batches of 64) on umc_ib0 for DUR seconds, with 1, 4 and 16
#    member ports (MEMBERS; each a process of its own, `fwd-bench member`,
#    attached but reading nothing, UMC_RX_THREAD=0: the kernel drops what
#    its socket cannot hold, so the members take no CPU from the sender),
#    under umc-sm --forwarding unicast and, back to back, under the
#    default multicast forwarding.  Unicast forwarding sends one datagram
#    per member; multicast sends one, and on the loopback the kernel then
#    makes the members' copies in the sender's own system call, as it
#    would not between hosts (there a switch does).  The sender's CPU time
#    (user + system, /usr/bin/time) per message is reported beside it.
# 2. The join window: a stream of RATE (20000) messages a second (`fwd-bench
#    stream`, send-only) and a member that joins and leaves JOINS (20)
#    times (`fwd-bench window`): how long after its join completed the
#    first message it received was sent ("late"), and in how many joins
#    messages sent after the join completed were missed (each message
#    carries the send time of the one before it), under
#    --forwarding unicast with the default
#    --forwarding-wait (the join is answered once the sender has the new
#    list) and with --forwarding-wait 0 (answered at once, as OpenSM does).
#
# Prints a table, with the load average before and after, and the lines
#   ratio ib_fwd_rate_N_vs_mcast VALUE   unicast / multicast forwarding
#                                        rate with N members (median of
#                                        the per-repetition ratios)
#   ratio ib_fwd_join_late_max_us VALUE  the largest late of the joins,
#                                        with the wait (microseconds)
#   ratio ib_fwd_join_late_max_us_nowait VALUE   ... with --forwarding-wait 0
# also written to $BUILD/fwd-bench-summary.txt (bench/run.sh does not run
# this script).  Everything runs in a private network namespace when one
# can be made, every process under timeout(1), readiness by pipe (-R).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
REPS=${REPS:-3}
DUR=${DUR:-0.5}
MEMBERS=${MEMBERS:-"1 4 16"}
RATE=${RATE:-20000}
JOINS=${JOINS:-20}
PROC_TIMEOUT=${PROC_TIMEOUT:-120}
BIN=$BUILD/bin
IB_ADDR=127.0.0.2
# shellcheck source=bench/netns.sh
. "$ROOT/bench/netns.sh"

log() { printf '%s\n' "$*" >&2; }
die() { log "fwd-bench: $*"; exit 1; }

if [ -z "${UMC_BENCH_INNER:-}" ]; then
	bench_build fwd-bench umc-sm umc-perf fwd-bench || exit 1
	bench_netns_enter "-n -rn" "${BASH_SOURCE[0]}" "$@"
	export UMC_BENCH_INNER=host
fi
bench_netns_lo mcast

TMP=$(mktemp -d /tmp/umc-fwd-bench.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT

# start NAME CMD...: CMD in the background with -R on a fifo; wait (bounded)
# for its ready byte.  STARTED is its pid.
start() {
	local name=$1 fd fifo="$TMP/$1.ready" r
	shift
	rm -f "$fifo"
	mkfifo "$fifo"
	exec {fd}<>"$fifo"
	timeout "$PROC_TIMEOUT" "$@" -R 9 9>"$fifo" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	STARTED=$!
	PIDS+=("$STARTED")
	if ! read -r -t 20 -N 1 -u "$fd" r; then
		exec {fd}<&-
		die "$name: not ready within 20 s: $(tail -3 "$TMP/$name.err")"
	fi
	exec {fd}<&-
}

# sm ARGS...: a fresh umc-sm on a port the kernel chooses; UMC_SM names it.
SM_PID=
sm() {
	local line
	sm_stop
	rm -f "$TMP/sm.ready"
	mkfifo "$TMP/sm.ready"
	"$BIN/umc-sm" --listen 127.0.0.1:0 --ready-fd 3 "$@" 3>"$TMP/sm.ready" >/dev/null \
		2>"$TMP/sm.err" &
	SM_PID=$!
	read -r -t 20 line <"$TMP/sm.ready" || die "umc-sm did not start: $(tail -3 "$TMP/sm.err")"
	line=${line#*ready on }
	export UMC_SM=${line%% *}
}
sm_stop() {
	[ -n "$SM_PID" ] || return 0
	kill "$SM_PID" 2>/dev/null || true
	wait "$SM_PID" 2>/dev/null || true
	SM_PID=
}

# members N GROUP: N idle member ports of GROUP; their pids in MPIDS.
members() {
	local i
	MPIDS=()
	for ((i = 0; i < $1; i++)); do
		UMC_RX_THREAD=0 start "m$i" "$BIN/fwd-bench" member -m "$2" -b $IB_ADDR
		MPIDS+=("$STARTED")
	done
}
members_stop() {
	local p
	for p in "${MPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${MPIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}

# rate MODE N: the send-only sender's rate (msgs/s) with N members, MODE
# multicast or unicast forwarding, into RESULT.  (Not in a $(...): its
# processes must be this shell's, so that the EXIT trap ends them.)
rate() {
	local mode=$1 n=$2 g=239.20.0.$((RANDOM % 250 + 1)) out=$TMP/send.out
	sm --forwarding "$mode"
	members "$n" "$g"
	/usr/bin/time -f 'cpu %U %S' -o "$TMP/cpu" timeout "$PROC_TIMEOUT" "$BIN/umc-perf" -s -o \
		-m "$g" -b $IB_ADDR -S 64 -B 64 -D "$DUR" >"$out" 2>&1 || die "umc-perf: $(tail -3 "$out")"
	members_stop
	RESULT=$(sed -n 's/^result .* rate=\([0-9.]*\).*/\1/p' "$out" | head -1)
	# The sender's CPU time (user + system) per message, in microseconds.
	CPU=$(awk -v m="$(sed -n 's/^result .* msgs=\([0-9]*\).*/\1/p' "$out" | head -1)" \
		'$1 == "cpu" && m > 0 { printf "%.3f", ($2 + $3) * 1e6 / m }' "$TMP/cpu")
}

# window WAIT: the window joiner's result line, under --forwarding-wait
# WAIT, into RESULT.
window() {
	local g=239.21.0.$((RANDOM % 250 + 1)) spid
	sm --forwarding unicast --forwarding-wait "$1"
	start stream "$BIN/fwd-bench" stream -m "$g" -b $IB_ADDR -r "$RATE"
	spid=$STARTED
	timeout "$PROC_TIMEOUT" "$BIN/fwd-bench" window -m "$g" -b $IB_ADDR -j "$JOINS" -r "$RATE" \
		>"$TMP/window.out" 2>&1 || die "fwd-bench window: $(tail -3 "$TMP/window.out")"
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	RESULT=$(grep '^result window' "$TMP/window.out")
}

field() { sed -n "s/.* $1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "== $REPS repetitions, $DUR s each, members: $MEMBERS (load $LOAD_BEFORE)"
declare -A U M UC MC
for n in $MEMBERS; do
	for ((r = 1; r <= REPS; r++)); do
		rate unicast "$n"
		u=$RESULT uc=$CPU
		rate multicast "$n"
		m=$RESULT mc=$CPU
		log "   $n members, rep $r: unicast forwarding $u msgs/s ($uc us CPU/msg), multicast $m msgs/s ($mc us CPU/msg)"
		U[$n]+="$u " M[$n]+="$m " UC[$n]+="$uc " MC[$n]+="$mc "
	done
done
log "== join window: $JOINS joins, a stream of $RATE msgs/s"
window "${FWD_WAIT:-250}"
W=$RESULT
window 0
W0=$RESULT
sm_stop
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

{
	echo "InfiniBand link, unicast forwarding (umc-sm --forwarding unicast): $REPS repetitions of $DUR s"
	echo "load average before: $LOAD_BEFORE, after: $LOAD_AFTER ($(nproc) CPUs)"
	printf '  %-8s %16s %16s %10s %22s %14s %14s\n' members "unicast msgs/s" "multicast msgs/s" ratio \
		"unicast datagrams/s" "unicast us/msg" "mcast us/msg"
	for n in $MEMBERS; do
		ratios=$(awk -v A="${U[$n]}" -v B="${M[$n]}" 'BEGIN { k = split(A, a, " "); split(B, b, " ")
			for (i = 1; i <= k; i++) if (b[i] > 0) printf "%.6f\n", a[i] / b[i] }' | median)
		ru=$(tr ' ' '\n' <<<"${U[$n]}" | grep . | median)
		rm_=$(tr ' ' '\n' <<<"${M[$n]}" | grep . | median)
		printf '  %-8s %16.0f %16.0f %10.2f %22.0f %14s %14s\n' "$n" "$ru" "$rm_" "$ratios" \
			"$(awk -v r="$ru" -v n="$n" 'BEGIN {print r * n}')" \
			"$(tr ' ' '\n' <<<"${UC[$n]}" | grep . | median)" "$(tr ' ' '\n' <<<"${MC[$n]}" | grep . | median)"
		FIG[$n]=$(printf '%.2f' "$ratios")
	done
	echo
	echo "join window ($JOINS joins, a message every $(field period_us "$W") us):"
	echo "  --forwarding-wait ${FWD_WAIT:-250}: late p50 $(field late_p50_us "$W") us, max $(field late_max_us "$W") us, joins that missed messages $(field missed_joins "$W")"
	echo "  --forwarding-wait 0:   late p50 $(field late_p50_us "$W0") us, max $(field late_max_us "$W0") us, joins that missed messages $(field missed_joins "$W0")"
	echo
	for n in $MEMBERS; do echo "ratio ib_fwd_rate_${n}_vs_mcast ${FIG[$n]}"; done
	echo "ratio ib_fwd_join_late_max_us $(field late_max_us "$W")"
	echo "ratio ib_fwd_join_late_max_us_nowait $(field late_max_us "$W0")"
} | tee "$TMP/table"
grep '^ratio ' "$TMP/table" >"$BUILD/fwd-bench-summary.txt"
log "summary: $BUILD/fwd-bench-summary.txt"
