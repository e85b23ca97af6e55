#!/usr/bin/env bash
# bench/join-storm.sh - join storms against umc-sm (issue 36, "join storms";
# issue 32, defect 6): N InfiniBand ports that join at once, measured with
# bench/join-storm.c.
#
#   bench/join-storm.sh                      build (Release, build-bench/) and measure
#   REPS=3 STORM_N="100 1000" bench/join-storm.sh
#
# For each N in STORM_N, each storm runs REPS times, each time against a
# fresh umc-sm:
#   one    N ports join one group;
#   many   N ports join 8 groups each, groups of their own (8 N groups);
# as N processes of the library, each on its umc_ib0 port ("procs"), and
# as N ports one process simulates over umc-sm's protocol ("ports"), which
# loads umc-sm alone, without N processes to schedule.  Once: fdlimit, one
# process with RLIMIT_NOFILE 1024 joins 10 000 groups (issue 32, defect 6):
# what fails must fail with EMFILE at the attach.
#
# A join succeeds, or fails with the errno its manual page documents; a
# timeout (-ETIMEDOUT) or a join with no event at all is a failure of the
# run.  Printed: a table (median p50, p99 and max latency of the successful
# joins, over the repetitions; the time from the release to the last
# event; the kernel's drops at umc-sm's socket and at the ports' sockets),
# the load average before and after, and the lines
#   ratio storm_timeouts VALUE        joins that timed out or got no event, all runs
#   ratio storm_errors VALUE          other failures, all runs (but fdlimit's EMFILE)
#   ratio stormN_one_p50_ms VALUE     ... and _p99_ms; procs, one group
#   ratio stormN_many_p50_ms VALUE    ... and _p99_ms; procs, 8 groups each
#   ratio stormN_ports_one_p99_ms VALUE, stormN_ports_many_p99_ms VALUE
# also written to $BUILD/storm-summary.txt (bench/run.sh copies them into
# bench-summary.txt).
#
# Every process runs under timeout(1) in a private network namespace when
# one can be made (unshare -n), readiness by pipe, never by sleeping.  N =
# 1000 processes take about 10 s each to start on a 2-core machine.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
REPS=${REPS:-3}
STORM_N=${STORM_N:-"100 1000"}
MANY=8        # groups per port in "many"
FD_JOINS=10000
FD_LIMIT=1024
PROC_TIMEOUT=${PROC_TIMEOUT:-300}
STORM=$BUILD/bin/join-storm
UMC_SM=$BUILD/bin/umc-sm
# shellcheck source=bench/netns.sh
. "$ROOT/bench/netns.sh"

log() { printf '%s\n' "$*" >&2; }
die() { log "join-storm: $*"; exit 1; }

if [ -z "${UMC_BENCH_INNER:-}" ]; then
	bench_build storm umc-sm join-storm || exit 1
	bench_netns_enter -n "${BASH_SOURCE[0]}" "$@"
	export UMC_BENCH_INNER=host
fi
bench_netns_lo mcast

[ -x "$STORM" ] || die "$STORM not built"
[ -x "$UMC_SM" ] || die "$UMC_SM not built"

TMP=$(mktemp -d /tmp/umc-storm.XXXXXX)
SM_PID=
cleanup() {
	if [ -n "$SM_PID" ]; then
		kill "$SM_PID" 2>/dev/null || true
		wait "$SM_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# storm NAME SM-ARGS -- JOIN-STORM-ARGS: one run against a fresh umc-sm;
# its result lines go to $TMP/NAME.REP (REP: the caller's $rep)
storm() {
	local name=$1 ready addr sm_args=() rc=0
	shift
	while [ "$1" != -- ]; do sm_args+=("$1"); shift; done
	shift
	rm -f "$TMP/ready"
	mkfifo "$TMP/ready"
	"$UMC_SM" --listen 127.0.0.1:0 --ready-fd 3 "${sm_args[@]}" 3>"$TMP/ready" >/dev/null \
		2>"$TMP/umc-sm.log" &
	SM_PID=$!
	read -r -t 30 ready <"$TMP/ready" || die "umc-sm did not get ready: $(tail -3 "$TMP/umc-sm.log")"
	addr=${ready#*ready on }
	addr=${addr%% *}
	timeout "$PROC_TIMEOUT" "$STORM" -S "$addr" "$@" >"$TMP/$name.$rep" 2>"$TMP/err" || rc=$?
	[ "$rc" = 0 ] || log "   $name: join-storm $*: exit $rc: $(tail -2 "$TMP/err")"
	kill "$SM_PID"
	wait "$SM_PID" || die "umc-sm did not exit cleanly: $(tail -3 "$TMP/umc-sm.log")"
	SM_PID=
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "== join storms: N = $STORM_N, $REPS repetitions (load $LOAD_BEFORE)"
RUNS=()
for n in $STORM_N; do
	# umc-sm's caps, per source host: every port here comes from 127.0.0.1
	caps=(--max-ports-per-host $((n + 16)) --max-groups-per-host $((n * MANY + 16)))
	for ((rep = 1; rep <= REPS; rep++)); do
		for mode in procs ports; do
			k=; [ "$mode" = ports ] && k=_ports
			storm "storm${n}${k}_one" "${caps[@]}" -- -m "$mode" -n "$n"
			storm "storm${n}${k}_many" "${caps[@]}" -- -m "$mode" -n "$n" -g "$MANY" -o
		done
		log "   N = $n: repetition $rep done (load $(cut -d' ' -f1 /proc/loadavg))"
	done
	RUNS+=("storm${n}_one" "storm${n}_many" "storm${n}_ports_one" "storm${n}_ports_many")
done
rep=1
# One port holds all FD_JOINS memberships: above umc-sm's default caps of 8192
# per port and per source host, which would refuse the last ones (EINVAL).
storm fdlimit --max-groups-per-port $FD_JOINS --max-groups-per-host $FD_JOINS -- \
	-m procs -n 1 -g $FD_JOINS -f $FD_LIMIT
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# val NAME KEY REP: KEY's value in run NAME's repetition REP, or "-"
val() {
	local v
	v=$(sed -n "s/^result $2 //p" "$TMP/$1.$3" 2>/dev/null || true)
	echo "${v:--}"
}
# med NAME KEY: the median over the repetitions (lower middle), or "-"
med() {
	local r
	for ((r = 1; r <= REPS; r++)); do val "$1" "$2" "$r"; done |
		grep -v '^-$' | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'
}
# sum NAME KEY REPS: the sum over the repetitions ("-" counts as the run's joins: lost)
sum() {
	local r t=0 v
	for ((r = 1; r <= $3; r++)); do
		v=$(val "$1" "$2" "$r")
		[ "$v" = - ] && v=$(val "$1" joins "$r")
		[ "$v" = - ] && v=1 # no result at all: count the run as failed
		t=$((t + v))
	done
	echo "$t"
}

timeouts=0 errors=0
{
	echo "Join storms against umc-sm ($REPS repetitions, medians; load $LOAD_BEFORE before, $LOAD_AFTER after)"
	printf '  %-22s %7s %5s %8s %6s %9s %9s %9s %8s %8s %8s\n' storm joins ok timeouts errors \
		p50_ms p99_ms max_ms seconds sm_drops port_drops
	for name in "${RUNS[@]}" fdlimit; do
		reps=$REPS
		[ "$name" = fdlimit ] && reps=1
		t=$(($(sum "$name" timeouts "$reps") + $(sum "$name" lost "$reps")))
		e=$(sum "$name" errors "$reps")
		[ "$name" = fdlimit ] && e=$((e - $(sum "$name" errno_24 1)))
		timeouts=$((timeouts + t)) errors=$((errors + e))
		printf '  %-22s %7s %5s %8s %6s %9s %9s %9s %8s %8s %8s\n' "$name" \
			"$(med "$name" joins)" "$(med "$name" ok)" "$t" "$e" "$(med "$name" p50_ms)" \
			"$(med "$name" p99_ms)" "$(med "$name" max_ms)" "$(med "$name" seconds)" \
			"$(med "$name" sm_drops)" "$(med "$name" port_drops)"
	done
	echo "  (timeouts: -ETIMEDOUT or no event, summed over the repetitions; errors: other"
	echo "   failures, fdlimit's EMFILE, as ibv_attach_mcast(3) documents it, not counted)"
	echo
	echo "ratio storm_timeouts $timeouts"
	echo "ratio storm_errors $errors"
	for n in $STORM_N; do
		for s in one many; do
			echo "ratio storm${n}_${s}_p50_ms $(med "storm${n}_$s" p50_ms)"
			echo "ratio storm${n}_${s}_p99_ms $(med "storm${n}_$s" p99_ms)"
		done
		for s in one many; do
			echo "ratio storm${n}_ports_${s}_p99_ms $(med "storm${n}_ports_$s" p99_ms)"
		done
	done
} | tee "$TMP/table"
grep '^ratio ' "$TMP/table" >"$BUILD/storm-summary.txt"
log "summary: $BUILD/storm-summary.txt"
