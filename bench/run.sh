#!/usr/bin/env bash
# bench/run.sh - umcast against raw UDP multicast and libfabric's udp provider
# on loopback, in one run, with one table at the end (issues 3, 7 and 8).
#
#   bench/run.sh            build (Release, into build-bench/) and measure
#   REPS=11 DUR=1 bench/run.sh   more repetitions, longer rate runs
#   FAST=1 bench/run.sh     a short run, to try it: REPS=3, DUR=0.2,
#                           LAT_N=2000, smaller SA and storm runs (below)
#
# What it measures, for 64-, 1024- and 4096-byte messages, each measurement
# repeated REPS times (medians; ratios are medians of per-repetition ratios):
#   - message rate, 1 sender -> 1 receiver process (delivered msgs/s at the
#     receiver, and its loss): umcast (umc-perf), raw UDP (udp-perf),
#     libfabric udp (fi-perf), and umcast over the simulated InfiniBand
#     link (umc-perf on umc_ib0, against a umc-sm started here);
#   - round-trip latency p50/p99/p99.9 (ping on group A, echo on group B),
#     busy-polling, and event-driven: umc-perf -e on both ends (each sleeps
#     in poll(2) on its completion channel) against udp-perf -e (each
#     sleeps in poll(2) on its socket);
#   - fan-out to 1, 2 and 4 receiver processes (aggregate delivered rate
#     and loss), umcast and raw UDP (the libfabric udp provider cannot bind
#     two endpoints to one group:port on a host: see bench/README.md);
#   - the same-host path (issue 36; SAMEHOST=0 skips it): umcast with the
#     path on (UMC_SHM=1, transport "shm") and off (UMC_SHM=0, "noshm"),
#     each against raw UDP in the same repetition: fan-out to 1, 4 and 16
#     receiver processes (SAMEHOST_FANOUT), and the 1 -> 1 round trip,
#     busy-polling and both ends asleep.  Sixteen busy receivers share
#     CPU 1 as the others do (sender on CPU 0): the same layout for every
#     transport, and the host the issue names (one feed, many consumers on
#     a 2-core machine); each receiver gets a sixteenth of a CPU, which
#     both transports' buffers (socket, ring) must bridge; and its floor,
#     16 readers on CPU 1 that only copy each datagram from shared memory
#     into a receive buffer, then also check it with umcast's codecs
#     (bench/fanout-floor.c), against the same raw UDP runs;
#   - ICRC throughput over 4096-byte messages on one core (icrc-bench),
#     next to ISA-L's crc32 over the same bytes in the same run;
#   - SA joins per second and 10 000 group creations, umc-sm against
#     OpenSM 3.3.23 on ibsim (bench/sm-bench.sh; SM_BENCH=0 skips it);
#   - join storms: 100 and 1000 InfiniBand ports joining at once, one group
#     and 8 groups each, as processes and as ports simulated over umc-sm's
#     protocol: timeouts and join latency (bench/join-storm.sh, STORM_REPS
#     repetitions of STORM_N; STORM=0 skips it);
#   - diagnostic: umcast again with UMC_RX_THREAD=0; the transport's
#     floor, raw UDP round trips with RoCEv2's datagram shape (udp-perf -G,
#     busy and on an epoll set), and with RoCEv2's user-space work too
#     (udp-perf -V, umcast's codecs), also fanned out to 4 receivers, the
#     floor of the same-host path off's fan-out; and where a busy round trip's time goes,
#     kernel and user space, per side (bench/critpath.c, x86-64; DIAG=0
#     skips all three).
#
# Beside the table it writes $BUILD/bench-data.txt (every repetition's
# rates, losses and latency percentiles), the busy-polling and event-driven
# round-trip times of umcast (its defaults, and with the same-host path on
# and off), raw UDP and libfabric ($BUILD/bench-rtt/),
# and, with bench/plot.py, pictures of them as SVG (rtt-cdf.svg,
# rate-by-size.svg, fanout.svg).  It also writes $BUILD/bench-summary.txt,
# one line per figure, "ratio NAME VALUE".  umcast with the library's
# defaults (run.sh unsets UMC_SHM, so the same-host path is on only if the
# library turns it on by default), issue 7's: rate_vs_udp_SIZE,
# rate_vs_lf_SIZE, p50_vs_udp_SIZE, p50_vs_lf_SIZE, fanout4_vs_udp_SIZE,
# fanout4_loss_minus_udp_SIZE (percentage points), evlat_p50_vs_udp_64,
# icrc_vs_crc32_4096, ib_rate_vs_roce_64 (against RoCE with the same-host
# path off, which umc_ib0 lacks, where that ran) and sm_joins_vs_opensm; issue 36's
# p50_vs_floor_SIZE (umcast's busy p50 over udp-perf -V's, with DIAG) and
# sm_joins_floor_vs_opensm (bench/sa-null.c's joins/s over OpenSM's: the
# most any SA over umc-sm's transport could reach), and join-storm.sh's
# lines (storm_timeouts, stormN_*).  Then the same-host path's (issue 36),
# each against raw UDP, set explicitly (UMC_SHM=1 / UMC_SHM=0), whatever
# the default:
#   path on (UMC_SHM=1)
#     fanout16_vs_udp_SIZE            delivered msg/s, all 16 receivers (issue 36's name)
#     fanout16_loss_minus_udp_SIZE    loss, percentage points (issue 36's name)
#     fanoutN_shm_vs_udp_SIZE, fanoutN_shm_loss_minus_udp_SIZE     N = 4, 1
#     local_p50_vs_udp_SIZE           busy round trip, p50 (issue 36's name)
#     local_evlat_p50_vs_udp_SIZE     both ends asleep, p50 (issue 36's name)
#   path off (UMC_SHM=0)
#     fanoutN_noshm_vs_udp_SIZE, fanoutN_noshm_loss_minus_udp_SIZE  N = 16, 4, 1
#     local_noshm_p50_vs_udp_SIZE, local_noshm_evlat_p50_vs_udp_SIZE
# Every value is the median over the repetitions of a pair measured back
# to back; the table prints the spread of those pairs next to it.
#
# Fairness: the same batch (-B, WRs per post = datagrams per sendmmsg /
# recvmmsg), the same payload plus 32 bytes of RoCEv2 overhead for the
# baselines, the same process layout (sender pinned to CPU 0, receivers and
# the pong side to CPU 1), busy polling everywhere but in the event-driven
# round trips, where both sides of both transports sleep.
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
# FAST=1: shorter defaults, for trying the script (every one can still be
# set); the figures are then noisier.  sm-bench.sh and join-storm.sh take
# JOINS, CREATE and STORM_N from the environment.
if [ "${FAST:-0}" = 1 ]; then
	: "${REPS:=3}" "${DUR:=0.2}" "${LAT_N:=2000}" "${STORM_REPS:=1}"
	export JOINS=${JOINS:-100} CREATE=${CREATE:-1000} STORM_N=${STORM_N:-100}
fi
REPS=${REPS:-7}
DUR=${DUR:-0.5}         # seconds of sending per rate run
BATCH=${BATCH:-64}      # WRs per post / datagrams per sendmmsg and recvmmsg
SIZES=${SIZES:-"64 1024 4096"}
FANOUT=${FANOUT:-"1 2 4"}
case " $FANOUT " in *" 1 "*) ;; *) FANOUT="1 $FANOUT" ;; esac # 1 = the rate test
SAMEHOST=${SAMEHOST:-1} # 0: no same-host path comparison (UMC_SHM=1 / 0 against raw UDP)
SAMEHOST_FANOUT=${SAMEHOST_FANOUT:-"1 4 16"} # its receiver processes
[ "$SAMEHOST" = 1 ] || SAMEHOST_FANOUT=
case " $FANOUT " in *" 16 "*) [ -n "$SAMEHOST_FANOUT" ] && {
	echo "bench/run.sh: FANOUT 16 would share its names with the same-host path's" \
		"fanout16_* (issue 36's): leave 16 out of FANOUT, or set SAMEHOST=0" >&2
	exit 2
} ;;
esac
# The default lines measure the library's defaults; the same-host lines set UMC_SHM.
unset UMC_SHM
LAT_N=${LAT_N:-20000}   # round trips per latency run (after 1000 warm-up)
EV_N=${EV_N:-$LAT_N}    # round trips per event-driven latency run
FLOOR_N=${FLOOR_N:-50000} # datagrams each of the fan-out floor's 16 readers reads
PROC_TIMEOUT=${PROC_TIMEOUT:-60}
SM_BENCH=${SM_BENCH:-1} # 0: no umc-sm / OpenSM comparison
STORM=${STORM:-1}       # 0: no join storms
STORM_REPS=${STORM_REPS:-3} # repetitions of each storm; STORM_N ("100 1000") passes through
IB=${IB:-1}             # 0: no umcast over the simulated InfiniBand link
IB_ADDR=127.0.0.2       # umc_ib0's IPoIB address (UMC_IB_ADDR's default)
IB_MTU=2048             # umc-sm's path MTU: larger messages are not measured on umc_ib0
BIN=$BUILD/bin
# shellcheck source=bench/netns.sh
. "$ROOT/bench/netns.sh"

log() { printf '%s\n' "$*" >&2; }

# --- build (outside the namespace) -------------------------------------------
if [ -z "${UMC_BENCH_INNER:-}" ]; then
	if [ "${NO_BUILD:-0}" != 1 ]; then
		bench_configure bench || exit 1
		# lackey-lines: footprint.sh; sa-null: sm-bench.sh's floor
		targets=(umc-perf udp-perf icrc-bench umc-sm sa-null join-storm lackey-lines fanout-floor)
		[ "$(uname -m)" = x86_64 ] && targets+=(umc-critpath) # bench/critpath.c
		# fi-perf exists when libfabric-dev is installed (bench/CMakeLists.txt),
		# sa_client (sm-bench.sh's client) when libibumad-dev is.
		grep -q '^LIBFABRIC_FOUND:INTERNAL=1' "$BUILD/CMakeCache.txt" && targets+=(fi-perf)
		grep -q '^IBUMAD_FOUND:INTERNAL=1' "$BUILD/CMakeCache.txt" && targets+=(sa_client)
		bench_make bench "${targets[@]}" || exit 1
	fi
	# Into a private network namespace: as root, or as a user with user namespaces.
	bench_netns_enter "-n -rn" "${BASH_SOURCE[0]}" "$@"
	log "== no network namespace available: running in this one (libfabric skipped"
	log "   unless 224.0.0.0/4 already routes via lo)"
	export UMC_BENCH_INNER=host
fi

bench_netns_lo mcast

TMP=$(mktemp -d /tmp/umc-bench.XXXXXX)
RESULTS=$BUILD/bench-results.txt
SUMMARY=$BUILD/bench-summary.txt
: >"$RESULTS"
PIDS=()
SM_PID=
cleanup() {
	for p in "${PIDS[@]}" $SM_PID; do kill "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT

NCPU=$(nproc)
cpu() { # cpu N: taskset prefix for CPU N, nothing on a 1-CPU machine
	if [ "$NCPU" -ge 2 ]; then echo "taskset -c $1"; fi
}

# The transports.  umcast0: umcast with its background receive thread off
# (UMC_RX_THREAD=0), a diagnostic (DIAG=0 skips it).  umcib: umcast over
# the simulated InfiniBand link (umc_ib0, selected by its IPoIB address),
# 1 -> 1 rate only.  udpE: raw UDP whose event-driven ends sleep in poll(2)
# on an epoll set of the socket (udp-perf -E), the way a completion
# channel's fd is woken; event-driven round trips only, a diagnostic.
# udpG, udpEG: raw UDP with RoCEv2's datagram shape (udp-perf -G: the
# source address, TTL and TOS with every receive, three iovecs per
# datagram, umcast's socket options), busy-polling round trips and
# event-driven ones on an epoll set: what umcast's datagrams cost the
# kernel with none of umcast's user-space work; diagnostics.  udpV,
# udpEV: the same with RoCEv2's user-space work too, done with umcast's
# codecs (udp-perf -V: BTH, DETH and ICRC on send; ICRC, decode and GRH on
# receive), busy and event-driven: the floor of any RoCEv2 implementation
# on UDP sockets, which leaves out the verbs' queues, completions and
# events; diagnostics.  shm, noshm: umcast with the same-host path on
# (UMC_SHM=1) and off (UMC_SHM=0), whatever the library's default is.
declare -A TOOL=([umcast]=$BIN/umc-perf [udp]=$BIN/udp-perf [libfabric]=$BIN/fi-perf
	[umcast0]=$BIN/umc-perf [umcib]=$BIN/umc-perf [udpE]=$BIN/udp-perf [udpG]=$BIN/udp-perf
	[udpEG]=$BIN/udp-perf [udpV]=$BIN/udp-perf [udpEV]=$BIN/udp-perf [shm]=$BIN/umc-perf
	[noshm]=$BIN/umc-perf)
declare -A ENVS=([umcast]="" [udp]="" [libfabric]="" [umcast0]=UMC_RX_THREAD=0 [umcib]=""
	[udpE]="" [udpG]="" [udpEG]="" [udpV]="" [udpEV]="" [shm]=UMC_SHM=1 [noshm]=UMC_SHM=0)
declare -A ARGS=([umcast]="" [udp]="" [libfabric]="" [umcast0]="" [umcib]="-b $IB_ADDR"
	[udpE]="-E" [udpG]="-G" [udpEG]="-E -G" [udpV]="-V" [udpEV]="-E -V" [shm]="" [noshm]="")
declare -A GROUP=([umcast]=239.10.0.1 [udp]=239.10.1.1 [libfabric]=239.10.2.1
	[umcast0]=239.10.3.1 [umcib]=239.10.4.1 [udpE]=239.10.5.1 [udpG]=239.10.6.1
	[udpEG]=239.10.7.1 [udpV]=239.10.8.1 [udpEV]=239.10.9.1 [shm]=239.10.10.1
	[noshm]=239.10.11.1)
DIAG=${DIAG:-1}
TRANSPORTS=(umcast udp)
if [ -x "$BIN/fi-perf" ]; then
	TRANSPORTS+=(libfabric)
else
	log "== fi-perf not built (libfabric-dev missing: scripts/deps.sh bench): libfabric skipped"
fi

# umc-sm for the InfiniBand link: a fresh one for this run, on loopback.
if [ "$IB" = 1 ]; then
	if [ -x "$BIN/umc-sm" ]; then
		mkfifo "$TMP/sm.ready"
		"$BIN/umc-sm" --listen 127.0.0.1:0 --ready-fd 3 3>"$TMP/sm.ready" >/dev/null 2>"$TMP/umc-sm.log" &
		SM_PID=$!
		if read -r -t 20 line <"$TMP/sm.ready"; then
			sm_addr=${line#*ready on }
			ENVS[umcib]="UMC_SM=${sm_addr%% *}"
		else
			log "== umc-sm did not start ($(tail -1 "$TMP/umc-sm.log")): InfiniBand link skipped"
			IB=0
		fi
	else
		log "== umc-sm not built: InfiniBand link skipped"
		IB=0
	fi
fi

# launch NAME CPU CMD...: run CMD in the background with -R on a fifo, whose
# read end goes to READY[NAME].  Sets $STARTED to its pid.
declare -A READY
launch() {
	local name=$1 c=$2 fd fifo="$TMP/$1.ready"
	shift 2
	mkfifo "$fifo"
	exec {fd}<>"$fifo"
	READY[$name]=$fd
	# shellcheck disable=SC2046
	timeout "$PROC_TIMEOUT" $(cpu "$c") "$@" -R 9 9>"$fifo" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	STARTED=$!
	PIDS+=("$STARTED")
}
# ready NAME PID: wait (bounded) for NAME's ready byte; without one, kill
# PID and return 1
ready() {
	local fd=${READY[$1]} b rc=0
	read -r -t 20 -N 1 -u "$fd" b || rc=1
	exec {fd}<&-
	if [ $rc = 1 ]; then
		log "   $1: not ready within 20 s: $(tail -3 "$TMP/$1.err" 2>/dev/null)"
		kill "$2" 2>/dev/null || true
	fi
	return $rc
}
# start NAME CPU CMD...: launch, then ready.  Sets $STARTED to its pid.
start() { launch "$@" && ready "$1" "$STARTED"; }

# field KEY FILE: the value of KEY= on the result line of FILE
field() { { sed -n "s/^result .*[ ]$1=\\([^ ]*\\).*/\\1/p" "$2" 2>/dev/null || true; } | head -1; }

median() { # numbers on stdin -> the median (lower middle), or "-" if none
	sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'
}

# rate_once TRANSPORT SIZE NRECV -> "aggregate_rate loss_fraction" or "- -"
rate_once() {
	local t=$1 size=$2 n=$3 i tool=${TOOL[$1]} g=${GROUP[$1]} ok=1 agg=0 lost=0 exp=0
	local rpids=()
	# All at once, then each one's ready byte: started one by one, each
	# would share CPU 1 with the receivers before it, already polling,
	# and 16 took seconds.
	for ((i = 0; i < n; i++)); do
		# shellcheck disable=SC2086
		launch "r$i" 1 env ${ENVS[$t]} "$tool" ${ARGS[$t]} -m "$g" -S "$size" -B "$BATCH" -I 2000 -T 20000
		rpids+=("$STARTED")
	done
	for ((i = 0; i < n; i++)); do ready "r$i" "${rpids[$i]}" || ok=0; done
	if [ $ok = 1 ]; then
		# shellcheck disable=SC2086,SC2046
		timeout "$PROC_TIMEOUT" $(cpu 0) env ${ENVS[$t]} "$tool" ${ARGS[$t]} -s -o -m "$g" -S "$size" \
			-B "$BATCH" -D "$DUR" >"$TMP/s.out" 2>"$TMP/s.err" || ok=0
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

# lat_once TRANSPORT SIZE [-e] -> "p50 p99 p999" (us) or "- - -"; -e: both
# ends sleep (event-driven round trips), otherwise both busy-poll.  LAT_ENV:
# more environment for both ends (cp_once's LD_PRELOAD).  With RTT_REP set
# (the repetition), the round-trip times of umcast, udp, libfabric, shm
# and noshm go
# to $RTT_DIR/TRANSPORT-SIZE-busy|ev-REP.txt (ping's -O) for bench/plot.py.
RTT_DIR=$BUILD/bench-rtt
rm -rf "$RTT_DIR"
mkdir -p "$RTT_DIR"
lat_once() {
	local t=$1 size=$2 ev=${3:-} tool=${TOOL[$1]} g=${GROUP[$1]} ok=1 ppid n=$LAT_N dump=()
	[ -n "$ev" ] && n=$EV_N
	case "${RTT_REP:+$t}" in umcast | udp | libfabric | shm | noshm)
		dump=(-O "$RTT_DIR/$t-$size-$([ -n "$ev" ] && echo ev || echo busy)-$RTT_REP.txt") ;;
	esac
	# shellcheck disable=SC2086
	if start pong 1 env ${ENVS[$t]} ${LAT_ENV:-} "$tool" ${ARGS[$t]} -L pong $ev -m "$g" -S "$size" \
		-B "$BATCH" -I 3000 -T 20000; then
		ppid=$STARTED
		# shellcheck disable=SC2086,SC2046
		timeout "$PROC_TIMEOUT" $(cpu 0) env ${ENVS[$t]} ${LAT_ENV:-} "$tool" ${ARGS[$t]} -L ping $ev \
			-m "$g" -S "$size" -B "$BATCH" -n "$n" -w 1000 "${dump[@]}" >"$TMP/ping.out" \
			2>"$TMP/ping.err" || ok=0
		wait "$ppid" || true
		cat "$TMP/ping.out" >>"$RESULTS"
	else
		ok=0
	fi
	rm -f "$TMP"/*.ready
	if [ $ok = 1 ] && [ -n "$(field p50_us "$TMP/ping.out")" ]; then
		echo "$(field p50_us "$TMP/ping.out") $(field p99_us "$TMP/ping.out") $(field p999_us "$TMP/ping.out")"
	else
		log "   $t latency${ev:+ (events)} size=$size failed: $(cat "$TMP/ping.err" "$TMP/pong.err" 2>/dev/null | head -3)"
		echo "- - -"
	fi
}

# Per transport, size (and receivers): the space-separated values of every
# repetition, "-" for a failed run, so that position k is repetition k.
declare -A RS LS LA LB LC EA EB EC
MAXN=1
for n in $FANOUT; do [ "$n" -gt "$MAXN" ] && MAXN=$n; done
# ALL_N: every number of receivers measured, FANOUT's and the same-host path's
# shellcheck disable=SC2086 # the lists, a number a word
ALL_N=$(printf '%s\n' $FANOUT $SAMEHOST_FANOUT | sort -nu | tr '\n' ' ')
med() { tr ' ' '\n' | grep -v -e '^-$' -e '^$' | median; }
in_list() { [[ " $2 " == *" $1 "* ]]; } # in_list WORD "LIST"

# Repetitions outermost, transports back to back inside, in reverse order
# every other repetition: a slow phase of the machine (other guests,
# frequency changes) hits every transport alike.
# order K N [lat|ev]: the transports measured in repetition K, with N
# receivers, or in the busy-polling (lat) or event-driven (ev) round trips.
# raw UDP runs for every N of FANOUT and SAMEHOST_FANOUT, umcast for FANOUT's,
# shm and noshm for SAMEHOST_FANOUT's, each next to udp.
order() {
	local list=() t
	for t in umcast umcast0 shm udp noshm udpE udpG udpEG udpV udpEV libfabric umcib; do
		case $t in
		umcast) [ -n "${3:-}" ] || in_list "$2" "$FANOUT" || continue ;;
		udp) [ -n "${3:-}" ] || in_list "$2" "$FANOUT $SAMEHOST_FANOUT" || continue ;;
		shm | noshm)
			[ -n "$SAMEHOST_FANOUT" ] || continue
			[ -n "${3:-}" ] || in_list "$2" "$SAMEHOST_FANOUT" || continue ;;
		udpE | udpEG | udpEV) [ "$DIAG" = 1 ] && [ "${3:-}" = ev ] || continue ;;
		udpG) [ "$DIAG" = 1 ] && [ "${3:-}" = lat ] || continue ;;
		# and the fan-out to 4 with RoCEv2's work: the path off's floor
		udpV) [ "$DIAG" = 1 ] && { [ "${3:-}" = lat ] || { [ -z "${3:-}" ] && [ "$2" = 4 ] &&
			in_list 4 "$SAMEHOST_FANOUT"; }; } || continue ;;
		umcast0) [ "$DIAG" = 1 ] && { [ "$2" = 1 ] || [ "$2" = "$MAXN" ]; } || continue ;;
		# libfabric's udp provider: one endpoint per group:port per host.
		libfabric) [ "$2" = 1 ] && [[ " ${TRANSPORTS[*]} " == *" libfabric "* ]] || continue ;;
		# umc_ib0: a UD message fits the path MTU (umc-perf refuses more).
		umcib) [ "$IB" = 1 ] && [ "$2" = 1 ] && [ -z "${3:-}" ] && [ "$size" -le "$IB_MTU" ] ||
			continue ;;
		esac
		[ "${3:-}" = ev ] && ! in_list "$t" "umcast shm noshm udp udpE udpEG udpEV" && continue
		list+=("$t")
	done
	if (($1 % 2 == 0)); then
		for ((i = ${#list[@]} - 1; i >= 0; i--)); do echo "${list[$i]}"; done
	else
		printf '%s\n' "${list[@]}"
	fi
}
log "== $(nproc) CPUs, batch $BATCH, $DUR s per rate run, $REPS repetitions, $LAT_N round trips"
log "   (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((k = 1; k <= REPS; k++)); do
	for size in $SIZES; do
		line="   rep $k size $size:"
		for n in $ALL_N; do
			for t in $(order "$k" "$n"); do
				read -r r l < <(rate_once "$t" "$size" "$n")
				RS[$t,$size,$n]+="$r "
				LS[$t,$size,$n]+="$l "
				line+=" $t/$n=$r"
			done
		done
		for t in $(order "$k" 1 lat); do
			read -r x y z < <(RTT_REP=$k lat_once "$t" "$size")
			LA[$t,$size]+="$x "
			LB[$t,$size]+="$y "
			LC[$t,$size]+="$z "
			line+=" $t/p50=${x}us"
		done
		for t in $(order "$k" 1 ev); do
			read -r x y z < <(RTT_REP=$k lat_once "$t" "$size" -e)
			EA[$t,$size]+="$x "
			EB[$t,$size]+="$y "
			EC[$t,$size]+="$z "
			line+=" $t/ev-p50=${x}us"
		done
		log "$line"
	done
done

icrc=() isal=() strm=()
for ((k = 0; k < REPS; k++)); do
	"$BIN/icrc-bench" -S 4096 -t 1 >"$TMP/icrc.out"
	cat "$TMP/icrc.out" >>"$RESULTS"
	icrc+=("$(field gbps "$TMP/icrc.out")")
	isal+=("$(sed -n 's/.*isal_gbps=\([^ ]*\).*/\1/p' "$TMP/icrc.out")")
	strm+=("$(sed -n 's/^result transport=icrc_stream .*gbps=\([^ ]*\).*/\1/p' "$TMP/icrc.out")")
done
ICRC_S="${icrc[*]}" ISAL_S="${isal[*]}" STRM_S="${strm[*]}"

# The same-host fan-out's floor (bench/fanout-floor.c): 16 readers on
# CPU 1 that copy, or copy and check, what a writer put in shared memory
# beforehand; FL[MODE,SIZE]: the repetitions' delivered rates (msg/s).
declare -A FL
if in_list 16 "$SAMEHOST_FANOUT" && [ -x "$BIN/fanout-floor" ]; then
	for ((k = 0; k < REPS; k++)); do
		for size in $SIZES; do
			"$BIN/fanout-floor" -p 16 -S "$size" -n "$FLOOR_N" -c "$((NCPU > 1))" >"$TMP/floor.out" || continue
			cat "$TMP/floor.out" >>"$RESULTS"
			for m in copy rocev2; do
				FL[$m,$size]+="$(sed -n "s/^result transport=floor-$m .* rate=\([^ ]*\).*/\1/p" "$TMP/floor.out") "
			done
		done
	done
fi

# Where a round trip goes (DIAG): both sides of a ping-pong of CP_SIZE
# bytes under bench/critpath.c (LD_PRELOAD), umcast and raw UDP back to
# back, REPS pairs (their result lines, traced, go to $RESULTS too): busy
# polling against raw UDP, then both ends asleep (-e) against raw UDP with
# RoCEv2's shape woken through an epoll set (udpEG), as a channel's fd is.
# CP[t,side,figure]: the repetitions' mean_us values; CP[t,side,figure,n]:
# their counts; t is "umcast-e" and "udpEG-e" for the event-driven runs.
CP_SIZE=${CP_SIZE:-64}
CP_LIB=$BUILD/lib/umc-critpath.so
CP_FIGS="user_rx_to_tx send recv_data recv_empty poll_user epoll0"
CP_EV_FIGS="wake_to_rx user_rx_to_tx send recv_data recv_empty"
declare -A CP
# cp_once TRANSPORT [-e]
cp_once() {
	local t=$1 ev=${2:-} side name count mean p50
	# shellcheck disable=SC2086 # $ev: no word, or -e
	read -r p50 _ < <(LAT_ENV="LD_PRELOAD=$CP_LIB" lat_once "$t" "$CP_SIZE" $ev)
	t+=$ev
	for side in pong ping; do
		while read -r _ name count mean; do
			CP[$t,$side,$name]+="${mean#mean_us=} "
			CP[$t,$side,$name,n]+="${count#count=} "
		done < <(grep '^critpath ' "$TMP/$side.err")
	done
	CP[$t,p50]+="$p50 "
}
if [ "$DIAG" = 1 ] && [ -f "$CP_LIB" ]; then
	log "== where a $CP_SIZE-byte round trip goes, busy and event-driven (bench/critpath.c, $REPS pairs)"
	for ((k = 0; k < REPS; k++)); do
		if ((k % 2)); then cp_once udp; cp_once umcast; else cp_once umcast; cp_once udp; fi
		if ((k % 2)); then cp_once udpEG -e; cp_once umcast -e; else cp_once umcast -e; cp_once udpEG -e; fi
	done
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# sub_bench SCRIPT SUMMARY REPS WHAT [WHY]: run bench/SCRIPT here in the
# namespace, unbuilt, with REPS repetitions, after removing its last
# $BUILD/SUMMARY; print its table (its output but the ratio lines), or
# nothing when it fails (logged with its exit status and WHY).
sub_bench() {
	local rc=0
	rm -f "$BUILD/$2"
	log "== $4 (bench/$1, $3 repetitions)"
	REPS=$3 NO_BUILD=1 BUILD=$BUILD bash "$ROOT/bench/$1" >"$TMP/$1.out" || rc=$?
	if [ "$rc" = 0 ]; then
		grep -v '^ratio ' "$TMP/$1.out" || true
	else
		log "   $1: exit $rc${5:+ ($5)}"
	fi
}

# umc-sm against OpenSM on ibsim: bench/sm-bench.sh, here in the namespace.
SM_TABLE=
if [ "$SM_BENCH" = 1 ]; then
	if [ -n "$SM_PID" ]; then
		kill "$SM_PID" 2>/dev/null || true
		wait "$SM_PID" 2>/dev/null || true
		SM_PID=
	fi
	SM_TABLE=$(sub_bench sm-bench.sh sm-bench-summary.txt "$REPS" "umc-sm against OpenSM on ibsim" \
		"77: OpenSM/ibsim missing: scripts/deps.sh bench")
fi

# Join storms against umc-sm: bench/join-storm.sh, here in the namespace.
STORM_TABLE=
if [ "$STORM" = 1 ]; then
	STORM_TABLE=$(sub_bench join-storm.sh storm-summary.txt "$STORM_REPS" "join storms")
fi

# --- the figures ---------------------------------------------------------------
# pstat ratio|diff "a1 a2 .." "b1 b2 ..": over the repetitions k where both
# ran, the median, smallest and largest of a_k/b_k (ratio) or of
# 100*(a_k - b_k) (diff: loss fractions -> percentage points): "med lo hi",
# or "- - -".  Runs of the same repetition are back to back, so the
# machine's slow phases disturb a paired ratio much less than a ratio of
# medians.
pstat() {
	awk -v M="$1" -v A="$2" -v B="$3" 'BEGIN {
		n = split(A, a, " "); split(B, b, " "); k = 0
		for (i = 1; i <= n; i++) {
			if (a[i] == "-" || a[i] == "" || b[i] == "-" || b[i] == "") continue
			if (M == "ratio") { if (b[i] + 0 <= 0) continue; v[++k] = a[i] / b[i] }
			else v[++k] = 100 * (a[i] - b[i])
		}
		if (!k) { print "- - -"; exit }
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		printf "%.2f %.2f %.2f\n", v[int((k + 1) / 2)], v[1], v[k] }'
}
declare -A FIG LO HI
# figure NAME ratio|diff A B: record a summary figure and its spread
figure() {
	read -r FIG[$1] LO[$1] HI[$1] < <(pstat "$2" "$3" "$4")
}
# fig NAME: "value (lo-hi)" for the table
fig() {
	if [ "${FIG[$1]:--}" = - ]; then echo "-"; else echo "${FIG[$1]} (${LO[$1]}..${HI[$1]})"; fi
}
FAN4=
case " $FANOUT " in *" 4 "*) FAN4=4 ;; esac
for size in $SIZES; do
	figure "rate_vs_udp_$size" ratio "${RS[umcast,$size,1]:-}" "${RS[udp,$size,1]:-}"
	figure "rate_vs_lf_$size" ratio "${RS[umcast,$size,1]:-}" "${RS[libfabric,$size,1]:-}"
	figure "p50_vs_udp_$size" ratio "${LA[umcast,$size]:-}" "${LA[udp,$size]:-}"
	figure "p50_vs_lf_$size" ratio "${LA[umcast,$size]:-}" "${LA[libfabric,$size]:-}"
	figure "evlat_p50_vs_udp_$size" ratio "${EA[umcast,$size]:-}" "${EA[udp,$size]:-}"
	figure "diag_evlat_p50_vs_udp_epoll_$size" ratio "${EA[umcast,$size]:-}" "${EA[udpE,$size]:-}"
	figure "udp_epoll_vs_udp_evlat_$size" ratio "${EA[udpE,$size]:-}" "${EA[udp,$size]:-}"
	# The floors: KIND:BUSY:EV, -G's (shape) and -V's (work).
	for fl in shape:udpG:udpEG work:udpV:udpEV; do
		IFS=: read -r k b e <<<"$fl"
		figure "diag_p50_vs_udp_${k}_$size" ratio "${LA[umcast,$size]:-}" "${LA[$b,$size]:-}"
		figure "udp_${k}_vs_udp_p50_$size" ratio "${LA[$b,$size]:-}" "${LA[udp,$size]:-}"
		figure "diag_evlat_p50_vs_udp_epoll_${k}_$size" ratio "${EA[umcast,$size]:-}" \
			"${EA[$e,$size]:-}"
		figure "udp_epoll_${k}_vs_udp_evlat_$size" ratio "${EA[$e,$size]:-}" "${EA[udp,$size]:-}"
	done
	# umc_ib0 has no same-host path: it is held against RoCE without it
	# (noshm) where that ran, not against RoCE's default, which has it.
	roce=umcast
	[ -n "${RS[noshm,$size,1]:-}" ] && roce=noshm
	figure "ib_rate_vs_roce_$size" ratio "${RS[umcib,$size,1]:-}" "${RS[$roce,$size,1]:-}"
	for n in $FANOUT; do
		figure "fanout${n}_vs_udp_$size" ratio "${RS[umcast,$size,$n]:-}" "${RS[udp,$size,$n]:-}"
		figure "fanout${n}_loss_minus_udp_$size" diff "${LS[umcast,$size,$n]:-}" "${LS[udp,$size,$n]:-}"
		figure "diag_fanout${n}_vs_udp_$size" ratio "${RS[umcast0,$size,$n]:-}" "${RS[udp,$size,$n]:-}"
	done
	figure "diag_rate_vs_udp_$size" ratio "${RS[umcast0,$size,1]:-}" "${RS[udp,$size,1]:-}"
	figure "diag_p50_vs_udp_$size" ratio "${LA[umcast0,$size]:-}" "${LA[udp,$size]:-}"
	# issue 36's name for the busy p50 over its floor, diag_p50_vs_udp_work_SIZE
	figure "p50_vs_floor_$size" ratio "${LA[umcast,$size]:-}" "${LA[udpV,$size]:-}"
	figure "udp_vs_lf_$size" ratio "${RS[udp,$size,1]:-}" "${RS[libfabric,$size,1]:-}"
done
# The same-host path's: sh_name N MODE -> the name's head for N receivers
# with the path on (shm: issue 36's fanout16, else fanoutN_shm) or off
# (noshm: fanoutN_noshm); sh_lat MODE -> local or local_noshm.
sh_name() {
	if [ "$2" = shm ] && [ "$1" = 16 ]; then echo fanout16; else echo "fanout$1_$2"; fi
}
sh_lat() { if [ "$1" = shm ]; then echo local; else echo local_noshm; fi; }
for size in $SIZES; do
	[ -n "$SAMEHOST_FANOUT" ] || break
	for m in shm noshm; do
		for n in $SAMEHOST_FANOUT; do
			f=$(sh_name "$n" "$m")
			figure "${f}_vs_udp_$size" ratio "${RS[$m,$size,$n]:-}" "${RS[udp,$size,$n]:-}"
			figure "${f}_loss_minus_udp_$size" diff "${LS[$m,$size,$n]:-}" "${LS[udp,$size,$n]:-}"
		done
		f=$(sh_lat "$m")
		figure "${f}_p50_vs_udp_$size" ratio "${LA[$m,$size]:-}" "${LA[udp,$size]:-}"
		figure "${f}_evlat_p50_vs_udp_$size" ratio "${EA[$m,$size]:-}" "${EA[udp,$size]:-}"
	done
done
for size in $SIZES; do
	for m in copy rocev2; do
		figure "fanout16_floor_${m}_vs_udp_$size" ratio "${FL[$m,$size]:-}" "${RS[udp,$size,16]:-}"
	done
	# The path off's fan-out floor: raw UDP receivers doing RoCEv2's work.
	figure "fanout4_udp_work_vs_udp_$size" ratio "${RS[udpV,$size,4]:-}" "${RS[udp,$size,4]:-}"
	figure "fanout4_udp_work_loss_minus_udp_$size" diff "${LS[udpV,$size,4]:-}" "${LS[udp,$size,4]:-}"
done
figure icrc_vs_crc32_4096 ratio "$ICRC_S" "$ISAL_S"
if [ "$SM_BENCH" = 1 ] && [ -r "$BUILD/sm-bench-summary.txt" ]; then
	for f in sm_joins_vs_opensm sm_create_vs_opensm sm_joins_floor_vs_opensm; do
		FIG[$f]=$(sed -n "s/^ratio $f //p" "$BUILD/sm-bench-summary.txt")
		FIG[$f]=${FIG[$f]:--}
	done
fi
if [ "$STORM" = 1 ] && [ -r "$BUILD/storm-summary.txt" ]; then
	for f in storm_timeouts storm_errors; do
		FIG[$f]=$(sed -n "s/^ratio $f //p" "$BUILD/storm-summary.txt")
	done
fi

# The summary: the names issue 7 lists, in its order, for the sizes run.
{
	for name in rate_vs_udp rate_vs_lf p50_vs_udp p50_vs_lf fanout4_vs_udp fanout4_loss_minus_udp; do
		[[ $name == fanout4* ]] && [ -z "$FAN4" ] && continue
		for size in $SIZES; do echo "ratio ${name}_$size ${FIG[${name}_$size]:--}"; done
	done
	if [ "$DIAG" = 1 ]; then
		for size in $SIZES; do echo "ratio p50_vs_floor_$size ${FIG[p50_vs_floor_$size]:--}"; done
	fi
	case " $SIZES " in *" 64 "*)
		echo "ratio evlat_p50_vs_udp_64 ${FIG[evlat_p50_vs_udp_64]:--}"
		[ "$IB" = 1 ] && echo "ratio ib_rate_vs_roce_64 ${FIG[ib_rate_vs_roce_64]:--}" ;;
	esac
	echo "ratio icrc_vs_crc32_4096 ${FIG[icrc_vs_crc32_4096]:--}"
	if [ -n "${FIG[sm_joins_vs_opensm]:-}" ]; then
		echo "ratio sm_joins_vs_opensm ${FIG[sm_joins_vs_opensm]}"
		echo "ratio sm_joins_floor_vs_opensm ${FIG[sm_joins_floor_vs_opensm]}"
	fi
	[ "$STORM" = 1 ] && [ -r "$BUILD/storm-summary.txt" ] && cat "$BUILD/storm-summary.txt"
	# The same-host path's, on (issue 36's names first) then off, the most
	# receivers first.
	for m in shm noshm; do
		[ -n "$SAMEHOST_FANOUT" ] || break
		for n in $(tr ' ' '\n' <<<"$SAMEHOST_FANOUT" | sort -rn); do
			for kind in vs_udp loss_minus_udp; do
				for size in $SIZES; do
					f=$(sh_name "$n" "$m")_${kind}_$size
					echo "ratio $f ${FIG[$f]:--}"
				done
			done
		done
		for kind in p50 evlat_p50; do
			for size in $SIZES; do
				f=$(sh_lat "$m")_${kind}_vs_udp_$size
				echo "ratio $f ${FIG[$f]:--}"
			done
		done
	done
	for name in fanout4_udp_work_vs_udp fanout4_udp_work_loss_minus_udp; do
		[ -n "${RS[udpV,${SIZES%% *},4]:-}" ] || break
		for size in $SIZES; do echo "ratio ${name}_$size ${FIG[${name}_$size]:--}"; done
	done
	for m in copy rocev2; do
		[ -n "${FL[$m,${SIZES%% *}]:-}" ] || break
		for size in $SIZES; do
			f=fanout16_floor_${m}_vs_udp_$size
			echo "ratio $f ${FIG[$f]:--}"
		done
	done
	true
} >"$SUMMARY"

# --- the table ---------------------------------------------------------------
pct() { awk -v a="$1" 'BEGIN {if (a == "-" || a == "") print "-"; else printf "%.1f%%", 100 * a}'; }
verdict() { # value op threshold -> PASS/FAIL/n/a
	awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN {
		if (v == "-" || v == "") { print "n/a "; exit }
		ok = (op == ">=") ? (v + 0 >= t + 0) : (v + 0 <= t + 0)
		print ok ? "PASS" : "FAIL" }'
}
# target NAME OP THRESHOLD: one line of the targets, with the pairs' spread
target() {
	local v=${FIG[$1]:--} spread=
	[ -n "${LO[$1]:-}" ] && [ "${LO[$1]}" != - ] && spread="  (pairs: ${LO[$1]}..${HI[$1]})"
	printf '  %s  %-30s %-2s %-5s %6s%s\n' "$(verdict "$v" "$2" "$3")" "$1" "$2" "$3" "$v" "$spread"
}
have_lf() { [[ " ${TRANSPORTS[*]} " == *" libfabric "* ]]; }
lat3() { echo "$(med <<<"$1") / $(med <<<"$2") / $(med <<<"$3")"; }
# lat3t KIND T SIZE: lat3 of transport T's busy (KIND empty) or event-driven
# (KIND evlat_) round trips
lat3t() {
	if [ -z "$1" ]; then
		lat3 "${LA[$2,$3]:-}" "${LB[$2,$3]:-}" "${LC[$2,$3]:-}"
	else
		lat3 "${EA[$2,$3]:-}" "${EB[$2,$3]:-}" "${EC[$2,$3]:-}"
	fi
}

print_table() {
echo
echo "umcast benchmark: loopback, $(nproc) CPUs ($(uname -r)), batch $BATCH, $REPS repetitions"
echo "(values: medians; ratios: median of the per-repetition ratios of back-to-back runs,"
echo " their smallest..largest in parentheses; sender on CPU 0, receivers/pong on CPU 1;"
echo " baselines send payload + 32 bytes; namespace: $UMC_BENCH_INNER;"
echo " load average before / after: $LOAD_BEFORE / $LOAD_AFTER)"
echo
echo "Message rate, 1 sender -> 1 receiver process (delivered msg/s at the receiver, loss)"
printf '%-5s | %-19s | %-19s | %-19s | %-17s | %-17s\n' size umcast "raw UDP" "libfabric udp" umcast/UDP umcast/lf
for size in $SIZES; do
	printf '%-5s | %9s %9s | %9s %9s | %9s %9s | %-17s | %-17s\n' "$size" \
		"$(med <<<"${RS[umcast,$size,1]:-}")" "($(pct "$(med <<<"${LS[umcast,$size,1]:-}")"))" \
		"$(med <<<"${RS[udp,$size,1]:-}")" "($(pct "$(med <<<"${LS[udp,$size,1]:-}")"))" \
		"$(med <<<"${RS[libfabric,$size,1]:-}")" "($(pct "$(med <<<"${LS[libfabric,$size,1]:-}")"))" \
		"$(fig "rate_vs_udp_$size")" "$(fig "rate_vs_lf_$size")"
done
if [ "$IB" = 1 ]; then
	echo
	echo "Message rate over the simulated InfiniBand link (umc_ib0, umc-sm), 1 -> 1"
	printf '%-5s | %-19s | %-17s\n' size "umcast IB" "IB/RoCE path off"
	for size in $SIZES; do
		printf '%-5s | %9s %9s | %-17s\n' "$size" \
			"$(med <<<"${RS[umcib,$size,1]:-}")" "($(pct "$(med <<<"${LS[umcib,$size,1]:-}")"))" \
			"$(fig "ib_rate_vs_roce_$size")"
	done
fi
echo
echo "Round-trip latency, busy-polling, us (p50 / p99 / p99.9)"
printf '%-5s | %-29s | %-29s | %-29s | %-17s | %-17s\n' size umcast "raw UDP" "libfabric udp" "p50 u/UDP" "p50 u/lf"
for size in $SIZES; do
	printf '%-5s | %-29s | %-29s | %-29s | %-17s | %-17s\n' "$size" \
		"$(lat3 "${LA[umcast,$size]:-}" "${LB[umcast,$size]:-}" "${LC[umcast,$size]:-}")" \
		"$(lat3 "${LA[udp,$size]:-}" "${LB[udp,$size]:-}" "${LC[udp,$size]:-}")" \
		"$(lat3 "${LA[libfabric,$size]:-}" "${LB[libfabric,$size]:-}" "${LC[libfabric,$size]:-}")" \
		"$(fig "p50_vs_udp_$size")" "$(fig "p50_vs_lf_$size")"
done
echo
echo "Round-trip latency, event-driven (both ends sleep in poll(2): on the completion"
echo "channel's fd / on the socket / on an epoll set of the socket), us (p50 / p99 / p99.9)"
printf '%-5s | %-29s | %-29s | %-29s | %-17s | %-17s\n' size "umcast -e" "raw UDP -e" \
	"raw UDP -E" "p50 u/UDP" "p50 u/UDP -E"
for size in $SIZES; do
	printf '%-5s | %-29s | %-29s | %-29s | %-17s | %-17s\n' "$size" \
		"$(lat3 "${EA[umcast,$size]:-}" "${EB[umcast,$size]:-}" "${EC[umcast,$size]:-}")" \
		"$(lat3 "${EA[udp,$size]:-}" "${EB[udp,$size]:-}" "${EC[udp,$size]:-}")" \
		"$(lat3 "${EA[udpE,$size]:-}" "${EB[udpE,$size]:-}" "${EC[udpE,$size]:-}")" \
		"$(fig "evlat_p50_vs_udp_$size")" "$(fig "diag_evlat_p50_vs_udp_epoll_$size")"
done
echo
[ "$MAXN" -gt 1 ] && echo "Fan-out: aggregate delivered msg/s over N receiver processes (loss), umcast / raw UDP," &&
	echo "ratio and loss difference (umcast - UDP, percentage points)"
for n in $FANOUT; do
	[ "$n" = 1 ] && continue
	echo "N=$n"
	printf '%-5s | %-19s | %-19s | %-17s | %-20s\n' size umcast "raw UDP" umcast/UDP "loss u-UDP (pp)"
	for size in $SIZES; do
		printf '%-5s | %9s %9s | %9s %9s | %-17s | %-20s\n' "$size" \
			"$(med <<<"${RS[umcast,$size,$n]:-}")" "($(pct "$(med <<<"${LS[umcast,$size,$n]:-}")"))" \
			"$(med <<<"${RS[udp,$size,$n]:-}")" "($(pct "$(med <<<"${LS[udp,$size,$n]:-}")"))" \
			"$(fig "fanout${n}_vs_udp_$size")" "$(fig "fanout${n}_loss_minus_udp_$size")"
	done
	echo
done
if [ -n "$SAMEHOST_FANOUT" ]; then
	echo "Same-host path (issue 36): umcast with it (UMC_SHM=1) and without (UMC_SHM=0), raw UDP"
	echo "Fan-out: aggregate delivered msg/s over N receiver processes (loss); ratios to raw UDP"
	echo "and loss differences (umcast - UDP, percentage points) of the same repetition"
	for n in $SAMEHOST_FANOUT; do
		echo "N=$n (figures: $(sh_name "$n" shm)_*, $(sh_name "$n" noshm)_*)"
		printf '%-5s | %-19s | %-19s | %-19s | %-17s | %-19s | %-17s | %-19s\n' size "path on" \
			"path off" "raw UDP" "on/UDP" "loss on-UDP (pp)" "off/UDP" "loss off-UDP (pp)"
		for size in $SIZES; do
			on=$(sh_name "$n" shm) off=$(sh_name "$n" noshm)
			printf '%-5s | %9s %9s | %9s %9s | %9s %9s | %-17s | %-19s | %-17s | %-19s\n' "$size" \
				"$(med <<<"${RS[shm,$size,$n]:-}")" "($(pct "$(med <<<"${LS[shm,$size,$n]:-}")"))" \
				"$(med <<<"${RS[noshm,$size,$n]:-}")" "($(pct "$(med <<<"${LS[noshm,$size,$n]:-}")"))" \
				"$(med <<<"${RS[udp,$size,$n]:-}")" "($(pct "$(med <<<"${LS[udp,$size,$n]:-}")"))" \
				"$(fig "${on}_vs_udp_$size")" "$(fig "${on}_loss_minus_udp_$size")" \
				"$(fig "${off}_vs_udp_$size")" "$(fig "${off}_loss_minus_udp_$size")"
		done
		echo
	done
	for ev in "" evlat_; do
		if [ -z "$ev" ]; then
			echo "Round trip 1 -> 1, busy-polling, us (p50 / p99 / p99.9); p50 ratios to raw UDP"
			echo "(figures: local_p50_vs_udp_SIZE, path on; local_noshm_p50_vs_udp_SIZE, off)"
		else
			echo "Round trip 1 -> 1, both ends asleep (-e), us (p50 / p99 / p99.9); p50 ratios to raw"
			echo "UDP -e (figures: local_evlat_p50_vs_udp_SIZE, path on; local_noshm_evlat_..., off)"
		fi
		printf '%-5s | %-29s | %-29s | %-29s | %-17s | %-17s\n' size "path on" "path off" "raw UDP" \
			"on/UDP" "off/UDP"
		for size in $SIZES; do
			printf '%-5s | %-29s | %-29s | %-29s | %-17s | %-17s\n' "$size" \
				"$(lat3t "$ev" shm "$size")" "$(lat3t "$ev" noshm "$size")" "$(lat3t "$ev" udp "$size")" \
				"$(fig "local_${ev}p50_vs_udp_$size")" "$(fig "local_noshm_${ev}p50_vs_udp_$size")"
		done
		echo
	done
fi
# floor_table FLAG KIND BUSY EV: a floor's table, udp-perf FLAG (-G or -V) run busy
# as transport BUSY and event-driven as EV, its figures named after KIND (above).
floor_table() {
	local f=$1 k=$2 b=$3 e=$4 row='%-5s | %-9s | %-17s | %-17s | %-9s | %-17s | %-17s\n'
	# shellcheck disable=SC2059 # the row's format, one for the header and the sizes
	printf "$row" size "UDP $f" "UDP $f/UDP" "umcast/UDP $f" "-E $f" "-E $f/UDP -e" \
		"umcast -e/-E $f"
	for size in $SIZES; do
		# shellcheck disable=SC2059
		printf "$row" "$size" "$(med <<<"${LA[$b,$size]:-}")" "$(fig "udp_${k}_vs_udp_p50_$size")" \
			"$(fig "diag_p50_vs_udp_${k}_$size")" "$(med <<<"${EA[$e,$size]:-}")" \
			"$(fig "udp_epoll_${k}_vs_udp_evlat_$size")" \
			"$(fig "diag_evlat_p50_vs_udp_epoll_${k}_$size")"
	done
}
if [ "$DIAG" = 1 ]; then
	echo "Diagnostic: umcast with its background receive thread off (UMC_RX_THREAD=0)"
	printf '%-5s | %-19s | %-17s | %-29s | %-17s | %-17s\n' size "rate 1->1" "rate u0/UDP" \
		"RTT p50 / p99 / p99.9" "p50 u0/UDP" "fan-out $MAXN u0/UDP"
	for size in $SIZES; do
		printf '%-5s | %9s %9s | %-17s | %-29s | %-17s | %-17s\n' "$size" \
			"$(med <<<"${RS[umcast0,$size,1]:-}")" "($(pct "$(med <<<"${LS[umcast0,$size,1]:-}")"))" \
			"$(fig "diag_rate_vs_udp_$size")" \
			"$(lat3 "${LA[umcast0,$size]:-}" "${LB[umcast0,$size]:-}" "${LC[umcast0,$size]:-}")" \
			"$(fig "diag_p50_vs_udp_$size")" "$(fig "diag_fanout${MAXN}_vs_udp_$size")"
	done
	echo
	echo "Diagnostic: the transport's floor, raw UDP with RoCEv2's datagram shape (udp-perf -G:"
	echo "source address, TTL and TOS per receive, three iovecs per datagram), round-trip p50, us;"
	echo "busy-polling / event-driven on an epoll set of the socket (-E -G), against raw UDP"
	echo "(-e for the event-driven) and umcast against it"
	floor_table -G shape udpG udpEG
	echo
	echo "Diagnostic: the floor of any RoCEv2 implementation on UDP sockets: udp-perf -V, -G and"
	echo "RoCEv2's user-space work with umcast's codecs (BTH, DETH and ICRC on send; ICRC,"
	echo "decode and GRH on receive), none of the verbs' queues, completions or events;"
	echo "round-trip p50, us, as above"
	floor_table -V work udpV udpEV
	echo
fi
# cp_table UMCAST_KEY UDP_KEY "FIGURES" TITLE: the critpath split of both sides.
cp_table() {
	local u=$1 w=$2 figs=$3 f c m r row
	echo "$4 (bench/critpath.c): mean us per call,"
	echo "medians of $REPS runs; calls per round trip in parentheses where not 1"
	printf '%-14s | %-17s | %-17s | %-17s | %-17s\n' figure "umcast pong" "UDP pong" "umcast ping" "UDP ping"
	for f in $figs; do
		row=$(printf '%-14s' "$f")
		for c in "$u,pong" "$w,pong" "$u,ping" "$w,ping"; do
			m=$(med <<<"${CP[$c,$f]:-}")
			r=$(awk -v a="$(med <<<"${CP[$c,$f,n]:-}")" -v b="$(med <<<"${CP[$c,send,n]:-}")" \
				'BEGIN {if (b > 0 && (a / b < 0.95 || a / b > 1.05)) printf "(%.2f)", a / b}')
			row+=$(printf ' | %-17s' "$m $r")
		done
		echo "$row"
	done
	echo "round-trip p50: umcast $(med <<<"${CP[$u,p50]}") us, UDP $(med <<<"${CP[$w,p50]}") us (both traced)"
	echo
}
if [ -n "${CP[umcast,p50]:-}" ]; then
	cp_table umcast udp "$CP_FIGS" "Where a busy $CP_SIZE-byte round trip goes"
fi
if [ -n "${CP[umcast-e,p50]:-}" ]; then
	cp_table umcast-e udpEG-e "$CP_EV_FIGS" \
		"Where an event-driven $CP_SIZE-byte round trip goes, both ends asleep (UDP: -E -G)"
fi
echo "ICRC over 4096-byte messages, one core: $(med <<<"$ICRC_S") GB/s;" \
	"ISA-L crc32 alone over the same bytes: $(med <<<"$ISAL_S") GB/s; ratio $(fig icrc_vs_crc32_4096)"
echo "  (a stream of them, as the send and receive paths compute it with the ICRC memo:" \
	"$(med <<<"$STRM_S") GB/s)"
if [ -n "$SM_TABLE" ]; then
	echo
	echo "$SM_TABLE"
fi
if [ -n "$STORM_TABLE" ]; then
	echo
	echo "$STORM_TABLE"
fi
echo
echo "Targets (issue 7; ib_rate and sm_joins: issue 8; storm, p50_vs_floor and the same-host"
echo "path's, fanout16_* and local_* with the path on: issue 36), from $SUMMARY"
for size in $SIZES; do
	if have_lf; then target "rate_vs_lf_$size" '>=' 1.0; fi
done
for size in $SIZES; do
	case $size in 4096) target "rate_vs_udp_$size" '>=' 0.92 ;; *) target "rate_vs_udp_$size" '>=' 0.95 ;; esac
done
for size in $SIZES; do target "p50_vs_udp_$size" '<=' 1.05; done
if [ "$DIAG" = 1 ]; then
	for size in $SIZES; do target "p50_vs_floor_$size" '<=' 1.05; done
fi
if [ -n "$FAN4" ]; then
	for size in $SIZES; do
		target "fanout4_vs_udp_$size" '>=' 0.95
		target "fanout4_loss_minus_udp_$size" '<=' 1
	done
fi
case " $SIZES " in *" 64 "*) target evlat_p50_vs_udp_64 '<=' 1.1 ;; esac
target icrc_vs_crc32_4096 '>=' 0.5
case " $SIZES " in *" 64 "*) [ "$IB" = 1 ] && target ib_rate_vs_roce_64 '>=' 0.9 ;; esac
if [ -n "${FIG[sm_joins_vs_opensm]:-}" ]; then
	target sm_joins_vs_opensm '>=' 5
	printf '  (its floor: sa-null / OpenSM joins/s: %s)\n' "${FIG[sm_joins_floor_vs_opensm]}"
fi
if [ -n "$SAMEHOST_FANOUT" ]; then # the same-host path on (UMC_SHM=1)
	if in_list 16 "$SAMEHOST_FANOUT" && in_list 1024 "$SIZES"; then
		target fanout16_vs_udp_1024 '>=' 3.0
		printf '  (its floors: readers that copy / copy and check, over raw UDP: %s / %s)\n' \
			"$(fig fanout16_floor_copy_vs_udp_1024)" "$(fig fanout16_floor_rocev2_vs_udp_1024)"
		target fanout16_loss_minus_udp_1024 '<=' 0
	fi
	if in_list 4 "$SAMEHOST_FANOUT" && in_list 1024 "$SIZES"; then
		target fanout4_noshm_loss_minus_udp_1024 '<=' 1
		printf '  (its floor: raw UDP receivers with RoCEv2'"'"'s work, udp-perf -V, loss minus raw UDP'"'"'s: %s)\n' \
			"$(fig fanout4_udp_work_loss_minus_udp_1024)"
	fi
	if in_list 64 "$SIZES"; then
		target local_p50_vs_udp_64 '<=' 0.5
		target local_evlat_p50_vs_udp_64 '<=' 0.8
	fi
fi
if [ -n "${FIG[storm_timeouts]:-}" ]; then
	target storm_timeouts '<=' 0
	target storm_errors '<=' 0 # every join succeeds or fails with its documented errno
fi
have_lf && printf '  (for scale: raw UDP / libfabric rate at %s B: %s)\n' \
	"${SIZES%% *}" "$(fig "udp_vs_lf_${SIZES%% *}")"
echo
}
print_table | tee "$BUILD/bench-table.txt"

# Every repetition's figures, for bench/plot.py: "rate TRANSPORT SIZE
# RECEIVERS REP MSGS_PER_S LOSS_FRACTION" and "lat TRANSPORT SIZE busy|ev
# REP P50 P99 P999" (us), "-" for a failed run.
DATA=$BUILD/bench-data.txt
{
	echo "# bench/run.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, REPS=$REPS DUR=$DUR" \
		"BATCH=$BATCH LAT_N=$LAT_N EV_N=$EV_N, load $LOAD_BEFORE / $LOAD_AFTER"
	for key in "${!RS[@]}"; do
		IFS=, read -r t size n <<<"$key"
		paste -d' ' <(tr ' ' '\n' <<<"${RS[$key]}" | grep .) <(tr ' ' '\n' <<<"${LS[$key]}" | grep .) |
			awk -v t="$t" -v s="$size" -v n="$n" '{print "rate", t, s, n, NR, $1, $2}'
	done
	# lat_lines MODE "P50S" "P99S" "P999S": one line per repetition
	lat_lines() {
		paste -d' ' <(tr ' ' '\n' <<<"$2" | grep .) <(tr ' ' '\n' <<<"$3" | grep .) \
			<(tr ' ' '\n' <<<"$4" | grep .) |
			awk -v t="$t" -v s="$size" -v m="$1" '{print "lat", t, s, m, NR, $1, $2, $3}'
	}
	for key in "${!LA[@]}"; do
		IFS=, read -r t size <<<"$key"
		lat_lines busy "${LA[$key]}" "${LB[$key]}" "${LC[$key]}"
	done
	for key in "${!EA[@]}"; do
		IFS=, read -r t size <<<"$key"
		lat_lines ev "${EA[$key]}" "${EB[$key]}" "${EC[$key]}"
	done
} >"$DATA"
# The pictures, from this run's numbers (bench/plot.py BUILD draws them
# again from a finished run's).
py=
for c in python3 /usr/bin/python3; do # Debian's, where another python3 comes first
	if "$c" -c 'import matplotlib' 2>/dev/null; then py=$c; break; fi
done
if [ -n "$py" ]; then
	"$py" "$ROOT/bench/plot.py" "$BUILD" || log "== bench/plot.py failed"
else
	log "== no pictures: python3-matplotlib is missing (scripts/deps.sh bench)"
fi
echo "every result line: $RESULTS; this table: $BUILD/bench-table.txt; summary: $SUMMARY"
echo "data: $DATA, $RTT_DIR/; pictures: $BUILD/rtt-cdf.svg, rate-by-size.svg, fanout.svg"
