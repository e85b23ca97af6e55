#!/usr/bin/env bash
# bench/run.sh - umcast against raw UDP multicast and libfabric's udp provider
# on loopback, in one run, with one table at the end (issue 3).
#
#   bench/run.sh            build (Release, into build-bench/) and measure
#   REPS=11 DUR=1 bench/run.sh   more repetitions, longer rate runs
#
# What it measures, for 64-, 1024- and 4096-byte messages, each measurement
# repeated REPS times (medians; ratios are medians of per-repetition ratios):
#   - message rate, 1 sender -> 1 receiver process (delivered msgs/s at the
#     receiver, and its loss): umcast (umc-perf), raw UDP (udp-perf),
#     libfabric udp (fi-perf);
#   - round-trip latency p50/p99/p99.9 (ping on group A, echo on group B);
#   - fan-out to 1, 2 and 4 receiver processes (aggregate delivered rate),
#     umcast and raw UDP (the libfabric udp provider cannot bind two
#     endpoints to one group:port on a host: see bench/README.md);
#   - ICRC throughput over 4096-byte messages on one core (icrc-bench);
#   - diagnostic: umcast again with UMC_RX_THREAD=0 (DIAG=0 skips it).
#
# Fairness: the same batch (-B, WRs per post = datagrams per sendmmsg /
# recvmmsg), the same payload plus 32 bytes of RoCEv2 overhead for the
# baselines, the same process layout (sender pinned to CPU 0, receivers and
# the pong side to CPU 1), busy polling everywhere.
#
# Isolation: everything runs in a private network namespace (unshare -n)
# whose only interface is lo and where 224.0.0.0/4 is routed to lo, so no
# datagram and no IGMP report can leave the machine.  The libfabric udp
# provider needs that route (its fi_join joins on the route's interface);
# without a namespace it is skipped.  Readiness is by ready-fd (-R), never
# by sleeping; every process runs under timeout(1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
REPS=${REPS:-7}
DUR=${DUR:-0.5}         # seconds of sending per rate run
BATCH=${BATCH:-64}      # WRs per post / datagrams per sendmmsg and recvmmsg
SIZES=${SIZES:-"64 1024 4096"}
FANOUT=${FANOUT:-"1 2 4"}
case " $FANOUT " in *" 1 "*) ;; *) FANOUT="1 $FANOUT" ;; esac # 1 = the rate test
LAT_N=${LAT_N:-20000}   # round trips per latency run (after 1000 warm-up)
PROC_TIMEOUT=${PROC_TIMEOUT:-60}
BIN=$BUILD/bin

log() { printf '%s\n' "$*" >&2; }

# --- build (outside the namespace) -------------------------------------------
if [ -z "${UMC_BENCH_INNER:-}" ]; then
	if [ "${NO_BUILD:-0}" != 1 ]; then
		log "== building (Release) into $BUILD"
		mkdir -p "$BUILD"
		cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DUMC_TESTS=OFF \
			>"$BUILD/bench-cmake.log" 2>&1 || { cat "$BUILD/bench-cmake.log" >&2; exit 1; }
		targets=(umc-perf udp-perf icrc-bench)
		# fi-perf exists when libfabric-dev is installed (bench/CMakeLists.txt).
		grep -q '^LIBFABRIC_FOUND:INTERNAL=1' "$BUILD/CMakeCache.txt" && targets+=(fi-perf)
		cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >"$BUILD/bench-build.log" 2>&1 ||
			{ tail -40 "$BUILD/bench-build.log" >&2; exit 1; }
	fi
	# Into a private network namespace: as root, or as a user with user namespaces.
	for u in "unshare -n" "unshare -rn"; do
		if $u true 2>/dev/null; then
			log "== running in a private network namespace ($u)"
			exec $u env UMC_BENCH_INNER=netns bash "${BASH_SOURCE[0]}" "$@"
		fi
	done
	log "== no network namespace available: running in this one (libfabric skipped"
	log "   unless 224.0.0.0/4 already routes via lo)"
	export UMC_BENCH_INNER=host
fi

if [ "$UMC_BENCH_INNER" = netns ]; then
	ip link set lo up
	ip route add 224.0.0.0/4 dev lo src 127.0.0.1
fi

TMP=$(mktemp -d /tmp/umc-bench.XXXXXX)
RESULTS=$BUILD/bench-results.txt
: >"$RESULTS"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT

NCPU=$(nproc)
cpu() { # cpu N: taskset prefix for CPU N, nothing on a 1-CPU machine
	if [ "$NCPU" -ge 2 ]; then echo "taskset -c $1"; fi
}

# umcast0: umcast with its background receive thread off (UMC_RX_THREAD=0),
# measured as a diagnostic next to the rest (DIAG=0 skips it).
declare -A TOOL=([umcast]=$BIN/umc-perf [udp]=$BIN/udp-perf [libfabric]=$BIN/fi-perf
	[umcast0]=$BIN/umc-perf)
declare -A ENVS=([umcast]= [udp]= [libfabric]= [umcast0]=UMC_RX_THREAD=0)
declare -A GROUP=([umcast]=239.10.0.1 [udp]=239.10.1.1 [libfabric]=239.10.2.1
	[umcast0]=239.10.3.1)
DIAG=${DIAG:-1}
TRANSPORTS=(umcast udp)
if [ -x "$BIN/fi-perf" ]; then
	TRANSPORTS+=(libfabric)
else
	log "== fi-perf not built (libfabric-dev missing: scripts/deps.sh bench): libfabric skipped"
fi

# start NAME CPU CMD...: run CMD in the background with -R on a fifo, wait
# (bounded) for its ready byte.  Sets $STARTED to its pid.
start() {
	local name=$1 c=$2 fd fifo="$TMP/$1.ready" b
	shift 2
	mkfifo "$fifo"
	exec {fd}<>"$fifo"
	# shellcheck disable=SC2046
	timeout "$PROC_TIMEOUT" $(cpu "$c") "$@" -R 9 9>"$fifo" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	STARTED=$!
	PIDS+=("$STARTED")
	if ! read -r -t 20 -N 1 -u "$fd" b; then
		exec {fd}<&-
		log "   $name: not ready within 20 s: $(tail -3 "$TMP/$name.err" 2>/dev/null)"
		kill "$STARTED" 2>/dev/null || true
		return 1
	fi
	exec {fd}<&-
}

# field KEY FILE: the value of KEY= on the result line of FILE
field() { { sed -n "s/^result .*[ ]$1=\\([^ ]*\\).*/\\1/p" "$2" 2>/dev/null || true; } | head -1; }

median() { # numbers on stdin -> the median (lower middle), or "-" if none
	sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'
}

# rate_once TRANSPORT SIZE NRECV -> "aggregate_rate loss_fraction" or "- -"
rate_once() {
	local t=$1 size=$2 n=$3 i tool=${TOOL[$1]} g=${GROUP[$1]} ok=1 agg=0 lost=0 exp=0
	local rpids=()
	for ((i = 0; i < n; i++)); do
		# shellcheck disable=SC2086
		if start "r$i" 1 env ${ENVS[$t]} "$tool" -m "$g" -S "$size" -B "$BATCH" -I 2000 -T 20000; then
			rpids+=("$STARTED")
		else
			ok=0
		fi
	done
	if [ $ok = 1 ]; then
		# shellcheck disable=SC2086
		timeout "$PROC_TIMEOUT" $(cpu 0) env ${ENVS[$t]} "$tool" -s -o -m "$g" -S "$size" -B "$BATCH" -D "$DUR" \
			>"$TMP/s.out" 2>"$TMP/s.err" || ok=0
		cat "$TMP/s.out" >>"$RESULTS"
	fi
	for p in "${rpids[@]}"; do wait "$p" || ok=0; done
	for ((i = 0; i < n; i++)); do
		cat "$TMP/r$i.out" >>"$RESULTS" 2>/dev/null || true
		local r l e
		r=$(field rate "$TMP/r$i.out"); l=$(field lost "$TMP/r$i.out"); e=$(field expected "$TMP/r$i.out")
		if [ -z "$r" ]; then ok=0; continue; fi
		agg=$(awk -v a="$agg" -v b="$r" 'BEGIN {print a + b}')
		lost=$((lost + ${l:-0})); exp=$((exp + ${e:-0}))
	done
	rm -f "$TMP"/*.ready
	if [ $ok = 1 ]; then
		awk -v a="$agg" -v l="$lost" -v e="$exp" 'BEGIN {printf "%.0f %.4f\n", a, e ? l / e : 0}'
	else
		log "   $t size=$size receivers=$n failed: $(cat "$TMP"/*.err 2>/dev/null | head -3)"
		echo "- -"
	fi
}

# lat_once TRANSPORT SIZE -> "p50 p99 p999" (us) or "- - -"
lat_once() {
	local t=$1 size=$2 tool=${TOOL[$1]} g=${GROUP[$1]} ok=1 ppid
	# shellcheck disable=SC2086
	if start pong 1 env ${ENVS[$t]} "$tool" -L pong -m "$g" -S "$size" -B "$BATCH" -I 3000 -T 20000; then
		ppid=$STARTED
		# shellcheck disable=SC2086
		timeout "$PROC_TIMEOUT" $(cpu 0) env ${ENVS[$t]} "$tool" -L ping -m "$g" -S "$size" -B "$BATCH" -n "$LAT_N" -w 1000 \
			>"$TMP/ping.out" 2>"$TMP/ping.err" || ok=0
		wait "$ppid" || true
		cat "$TMP/ping.out" >>"$RESULTS"
	else
		ok=0
	fi
	rm -f "$TMP"/*.ready
	if [ $ok = 1 ] && [ -n "$(field p50_us "$TMP/ping.out")" ]; then
		echo "$(field p50_us "$TMP/ping.out") $(field p99_us "$TMP/ping.out") $(field p999_us "$TMP/ping.out")"
	else
		log "   $t latency size=$size failed: $(cat "$TMP/ping.err" "$TMP/pong.err" 2>/dev/null | head -3)"
		echo "- - -"
	fi
}

declare -A RATE LOSS P50 P99 P999 FAN RS LS LA LB LC
MAXN=1
for n in $FANOUT; do [ "$n" -gt "$MAXN" ] && MAXN=$n; done
med() { tr ' ' '\n' | grep -v -e '^-$' -e '^$' | median; }

# Repetitions outermost, transports back to back inside, in reverse order
# every other repetition: a slow phase of the machine (other guests,
# frequency changes) hits every transport alike.
# order K N: the transports measured with N receivers in repetition K.
order() {
	local list=() t
	for t in umcast umcast0 udp libfabric; do
		case $t in
		umcast0) [ "$DIAG" = 1 ] && { [ "$2" = 1 ] || [ "$2" = "$MAXN" ]; } || continue ;;
		# libfabric's udp provider: one endpoint per group:port per host.
		libfabric) [ "$2" = 1 ] && [[ " ${TRANSPORTS[*]} " == *" libfabric "* ]] || continue ;;
		esac
		list+=("$t")
	done
	if (($1 % 2 == 0)); then
		for ((i = ${#list[@]} - 1; i >= 0; i--)); do echo "${list[$i]}"; done
	else
		printf '%s\n' "${list[@]}"
	fi
}
log "== $(nproc) CPUs, batch $BATCH, $DUR s per rate run, $REPS repetitions, $LAT_N round trips"
for ((k = 1; k <= REPS; k++)); do
	for size in $SIZES; do
		line="   rep $k size $size:"
		for n in $FANOUT; do
			for t in $(order "$k" "$n"); do
				read -r r l < <(rate_once "$t" "$size" "$n")
				RS[$t,$size,$n]+="$r "
				LS[$t,$size,$n]+="$l "
				line+=" $t/$n=$r"
			done
		done
		for t in $(order "$k" 1); do
			read -r x y z < <(lat_once "$t" "$size")
			LA[$t,$size]+="$x "
			LB[$t,$size]+="$y "
			LC[$t,$size]+="$z "
			line+=" $t/p50=${x}us"
		done
		log "$line"
	done
done
for size in $SIZES; do
	for t in "${TRANSPORTS[@]}" $([ "$DIAG" = 1 ] && echo umcast0); do
		for n in $FANOUT; do
			[ -n "${RS[$t,$size,$n]:-}" ] || continue
			FAN[$t,$size,$n]=$(med <<<"${RS[$t,$size,$n]}")
		done
		RATE[$t,$size]=$(med <<<"${RS[$t,$size,1]:-}")
		LOSS[$t,$size]=$(med <<<"${LS[$t,$size,1]:-}")
		P50[$t,$size]=$(med <<<"${LA[$t,$size]}")
		P99[$t,$size]=$(med <<<"${LB[$t,$size]}")
		P999[$t,$size]=$(med <<<"${LC[$t,$size]}")
	done
done

icrc=() isal=()
for ((k = 0; k < REPS; k++)); do
	"$BIN/icrc-bench" -S 4096 -t 1 >"$TMP/icrc.out"
	cat "$TMP/icrc.out" >>"$RESULTS"
	icrc+=("$(field gbps "$TMP/icrc.out")")
	isal+=("$(sed -n 's/.*isal_gbps=\([^ ]*\).*/\1/p' "$TMP/icrc.out")")
done
ICRC=$(printf '%s\n' "${icrc[@]}" | median)
ISAL=$(printf '%s\n' "${isal[@]}" | median)

# --- the table ---------------------------------------------------------------
# pratio "a1 a2 .." "b1 b2 ..": the median of the paired ratios a_k/b_k (runs
# of the same repetition, back to back), which the machine's slow phases
# disturb much less than a ratio of medians.
pratio() {
	awk -v A="$1" -v B="$2" 'BEGIN {
		n = split(A, a, " "); split(B, b, " ")
		for (i = 1; i <= n; i++)
			if (a[i] != "-" && a[i] != "" && b[i] != "-" && b[i] + 0 > 0)
				printf "%.6f\n", a[i] / b[i] }' | median |
		awk '{ if ($1 == "-") print "-"; else printf "%.2f\n", $1 }'
}
# prange "a1 .." "b1 ..": the smallest and largest paired ratio, "min-max"
prange() {
	awk -v A="$1" -v B="$2" 'BEGIN {
		n = split(A, a, " "); split(B, b, " "); k = 0
		for (i = 1; i <= n; i++)
			if (a[i] != "-" && a[i] != "" && b[i] != "-" && b[i] + 0 > 0) {
				r = a[i] / b[i]
				if (!k || r < lo) lo = r
				if (!k || r > hi) hi = r
				k++
			}
		if (k) printf "%.2f-%.2f\n", lo, hi; else print "-" }'
}
ratio() { # a b -> a/b with 2 decimals, or "-"
	awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b}'
}
pct() { awk -v a="$1" 'BEGIN {if (a == "-" || a == "") print "-"; else printf "%.1f%%", 100 * a}'; }
verdict() { # value op threshold -> PASS/FAIL/n/a
	awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN {
		if (v == "-" || v == "") { print "n/a "; exit }
		ok = (op == ">=") ? (v + 0 >= t + 0) : (v + 0 <= t + 0)
		print ok ? "PASS" : "FAIL" }'
}
have_lf() { [[ " ${TRANSPORTS[*]} " == *" libfabric "* ]]; }

print_table() {
echo
echo "umcast benchmark: loopback, $(nproc) CPUs ($(uname -r)), batch $BATCH, $REPS repetitions"
echo "(values: medians; ratios: medians of the per-repetition ratios of back-to-back runs)"
echo "(sender on CPU 0, receivers/pong on CPU 1; baselines send payload + 32 bytes; namespace: $UMC_BENCH_INNER)"
echo
echo "Message rate, 1 sender -> 1 receiver process (delivered msg/s at the receiver, loss)"
printf '%-6s | %-20s | %-20s | %-20s | %-10s | %-10s\n' size umcast "raw UDP" "libfabric udp" umcast/UDP umcast/lf
printf -- '-------+----------------------+----------------------+----------------------+------------+-----------\n'
for size in $SIZES; do
	printf '%-6s | %10s %9s | %10s %9s | %10s %9s | %-10s | %-10s\n' "$size" \
		"${RATE[umcast,$size]:--}" "($(pct "${LOSS[umcast,$size]:--}"))" \
		"${RATE[udp,$size]:--}" "($(pct "${LOSS[udp,$size]:--}"))" \
		"${RATE[libfabric,$size]:--}" "($(pct "${LOSS[libfabric,$size]:--}"))" \
		"$(pratio "${RS[umcast,$size,1]:-}" "${RS[udp,$size,1]:-}")" \
		"$(pratio "${RS[umcast,$size,1]:-}" "${RS[libfabric,$size,1]:-}")"
done
echo
echo "Round-trip latency, us (p50 / p99 / p99.9)"
printf '%-6s | %-24s | %-24s | %-24s | %-10s | %-10s\n' size umcast "raw UDP" "libfabric udp" "p50 u/UDP" "p50 u/lf"
printf -- '-------+--------------------------+--------------------------+--------------------------+------------+-----------\n'
for size in $SIZES; do
	printf '%-6s | %-24s | %-24s | %-24s | %-10s | %-10s\n' "$size" \
		"${P50[umcast,$size]:--} / ${P99[umcast,$size]:--} / ${P999[umcast,$size]:--}" \
		"${P50[udp,$size]:--} / ${P99[udp,$size]:--} / ${P999[udp,$size]:--}" \
		"${P50[libfabric,$size]:--} / ${P99[libfabric,$size]:--} / ${P999[libfabric,$size]:--}" \
		"$(pratio "${LA[umcast,$size]:-}" "${LA[udp,$size]:-}")" \
		"$(pratio "${LA[umcast,$size]:-}" "${LA[libfabric,$size]:-}")"
done
echo
echo "Fan-out: aggregate delivered msg/s over N receiver processes, loss in parentheses"
echo "(umcast / raw UDP = ratio)"
printf '%-6s' size
for n in $FANOUT; do printf ' | %-42s' "N=$n"; done
echo
for size in $SIZES; do
	printf '%-6s' "$size"
	for n in $FANOUT; do
		l1=$(med <<<"${LS[umcast,$size,$n]:-}") l2=$(med <<<"${LS[udp,$size,$n]:-}")
		printf ' | %-42s' "${FAN[umcast,$size,$n]:--} ($(pct "$l1")) / ${FAN[udp,$size,$n]:--} ($(pct "$l2")) = $(pratio "${RS[umcast,$size,$n]:-}" "${RS[udp,$size,$n]:-}")"
	done
	echo
done
echo
if [ "$DIAG" = 1 ]; then
	echo "Diagnostic: umcast with its background receive thread off (UMC_RX_THREAD=0)"
	printf '%-6s | %-20s | %-11s | %-26s | %-10s | %-24s\n' size "rate 1->1" "rate u0/UDP" \
		"RTT p50 / p99 / p99.9" "p50 u0/UDP" "fan-out $MAXN (u0/UDP)"
	for size in $SIZES; do
		printf '%-6s | %10s %9s | %-11s | %-26s | %-10s | %-24s\n' "$size" \
			"${RATE[umcast0,$size]:--}" "($(pct "${LOSS[umcast0,$size]:--}"))" \
			"$(pratio "${RS[umcast0,$size,1]:-}" "${RS[udp,$size,1]:-}")" \
			"${P50[umcast0,$size]:--} / ${P99[umcast0,$size]:--} / ${P999[umcast0,$size]:--}" \
			"$(pratio "${LA[umcast0,$size]:-}" "${LA[udp,$size]:-}")" \
			"${FAN[umcast0,$size,$MAXN]:--} ($(pratio "${RS[umcast0,$size,$MAXN]:-}" "${RS[udp,$size,$MAXN]:-}"))"
	done
	echo
fi
echo "ICRC over 4096-byte messages, one core: $ICRC GB/s (ISA-L crc32 alone: $ISAL GB/s)"
echo
r_udp=$(pratio "${RS[umcast,64,1]:-}" "${RS[udp,64,1]:-}")
r_lf=$(pratio "${RS[umcast,64,1]:-}" "${RS[libfabric,64,1]:-}")
r_lat=$(pratio "${LA[umcast,64]:-}" "${LA[udp,64]:-}")
r_fan=$(pratio "${RS[umcast,64,$MAXN]:-}" "${RS[udp,64,$MAXN]:-}")
echo "Targets (issue 3)"
printf '  %s  64-byte rate >= 0.8 x raw UDP          %s  (runs: %s)\n' "$(verdict "$r_udp" '>=' 0.8)" "$r_udp" \
	"$(prange "${RS[umcast,64,1]:-}" "${RS[udp,64,1]:-}")"
if have_lf; then
	printf '  %s  64-byte rate >= 2 x libfabric udp      %s  (runs: %s; raw UDP / libfabric: %s)\n' \
		"$(verdict "$r_lf" '>=' 2)" "$r_lf" "$(prange "${RS[umcast,64,1]:-}" "${RS[libfabric,64,1]:-}")" \
		"$(pratio "${RS[udp,64,1]:-}" "${RS[libfabric,64,1]:-}")"
else
	printf '  n/a   64-byte rate >= 2 x libfabric udp      (libfabric not measured)\n'
fi
printf '  %s  p50 RTT (64 B) <= 1.2 x raw UDP         %s  (runs: %s)\n' "$(verdict "$r_lat" '<=' 1.2)" "$r_lat" \
	"$(prange "${LA[umcast,64]:-}" "${LA[udp,64]:-}")"
printf '  %s  fan-out to %s (64 B) >= 0.8 x raw UDP    %s  (runs: %s)\n' "$(verdict "$r_fan" '>=' 0.8)" "$MAXN" "$r_fan" \
	"$(prange "${RS[umcast,64,$MAXN]:-}" "${RS[udp,64,$MAXN]:-}")"
printf '  %s  ICRC (4096 B) >= 4 GB/s                 %s\n' "$(verdict "$ICRC" '>=' 4)" "$ICRC"
if [ "$DIAG" = 1 ]; then
	printf '  with UMC_RX_THREAD=0: 64-byte rate %s, p50 RTT %s, fan-out %s x raw UDP\n' \
		"$(pratio "${RS[umcast0,64,1]:-}" "${RS[udp,64,1]:-}")" \
		"$(pratio "${LA[umcast0,64]:-}" "${LA[udp,64]:-}")" \
		"$(pratio "${RS[umcast0,64,$MAXN]:-}" "${RS[udp,64,$MAXN]:-}")"
fi
echo
}
print_table | tee "$BUILD/bench-table.txt"
echo "every result line: $RESULTS; this table: $BUILD/bench-table.txt"
