#!/usr/bin/env bash
# test_bench_plot.sh - bench/plot.py draws what a run's files say: from a
# made-up run whose medians and percentiles are known,
#
#  1. rtt-cdf.svg has a curve per transport, size and mode with the right
#     p50 and p99 in its legend (umcast 64 B busy: round trips of 1..1000
#     us, so p50 501.0 and p99 991; two repetitions pooled), and none for a
#     transport that has no samples;
#  2. rate-by-size.svg labels each bar with the median over the
#     repetitions (in thousands of msg/s), a failed repetition ("-") left
#     out;
#  3. fanout.svg exists, with both transports, and with umcast's same-host
#     path (shm) and 16 receivers where a run has them;
#  4. a BUILD with no numbers is an error (exit non-zero).
#
# Matplotlib's SVG keeps every text as a comment beside its glyphs, which is
# what is read here.  Skipped (77) without python3-matplotlib.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=check_lib.sh
. "$here/check_lib.sh"
plot=$here/../../bench/plot.py
py=
for c in /usr/bin/python3 python3; do
	if "$c" -c 'import matplotlib' 2>/dev/null; then py=$c; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3-matplotlib"; exit 77; }

b=$work/run
mkdir -p "$b/bench-rtt"
cat >"$b/bench-data.txt" <<'EOF'
# bench/run.sh made up for test_bench_plot.sh
rate umcast 64 1 1 100000 0.0000
rate umcast 64 1 2 120000 0.0000
rate umcast 64 1 3 110000 0.0000
rate udp 64 1 1 90000 0.0000
rate udp 64 1 2 - -
rate udp 64 1 3 70000 0.0000
rate umcast 64 2 1 150000 0.0100
rate udp 64 2 1 160000 0.0200
rate shm 64 16 1 900000 0.0100
rate udp 64 16 1 300000 0.0000
lat umcast 64 busy 1 10.0 20.0 30.0
EOF
# umcast, 64 B, busy: 1..1000 us (in ns), in two repetitions.
seq 1 500 | awk '{print $1 * 1000}' >"$b/bench-rtt/umcast-64-busy-1.txt"
seq 501 1000 | awk '{print $1 * 1000}' >"$b/bench-rtt/umcast-64-busy-2.txt"
# udp, 64 B, event-driven: 50 us each.
yes 50000 | head -n 100 >"$b/bench-rtt/udp-64-ev-1.txt"

if "$py" "$plot" "$b" >"$work/plot.out" 2>&1; then
	ok "plot.py: $(cat "$work/plot.out")"
else
	bad "plot.py failed: $(cat "$work/plot.out")"
fi
texts() { grep -o '<!-- [^>]* -->' "$b/$1" | sed 's/^<!-- //; s/ -->$//'; }

# 1. the CDF
for l in "umcast: p50 501.0, p99 991 µs" "raw UDP: p50 50.0, p99 50 µs" "64 B, busy-polling" \
	"64 B, event-driven (both ends asleep)"; do
	if texts rtt-cdf.svg | grep -qxF -- "$l"; then ok "rtt-cdf.svg: '$l'"; else bad "rtt-cdf.svg lacks '$l'"; fi
done
texts rtt-cdf.svg | grep -q '^libfabric udp' && bad "rtt-cdf.svg draws libfabric, which has no samples"

# 2. the rates: medians 110 (umcast) and 80 (udp: 90 and 70; the failed one left out)
for l in 110 80 "umcast" "raw UDP" "64 B"; do
	if texts rate-by-size.svg | grep -qxF -- "$l"; then ok "rate-by-size.svg: '$l'"; else bad "rate-by-size.svg lacks '$l'"; fi
done

# 3. fan-out
for l in umcast "raw UDP" "receiver processes" "umcast, same-host path (UMC_SHM=1)" 16; do
	if texts fanout.svg | grep -qxF -- "$l"; then ok "fanout.svg: '$l'"; else bad "fanout.svg lacks '$l'"; fi
done

# 4. nothing to draw
mkdir -p "$work/empty"
: >"$work/empty/bench-data.txt"
if "$py" "$plot" "$work/empty" >/dev/null 2>&1; then
	bad "plot.py drew nothing and exited 0"
else
	ok "plot.py with no numbers: an error"
fi
summary
