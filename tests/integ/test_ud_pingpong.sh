#!/usr/bin/env bash
# test_ud_pingpong.sh - Debian's prebuilt ibv_ud_pingpong (ibverbs-utils),
# unchanged, as server and client under umc-run on loopback: UD unicast
# between two processes that learn each other's LID, QPN, PSN and GID over
# TCP and send to them through ibv_create_ah (-g: a GRH to GID index 0,
# ::ffff:127.0.0.1).  Each must complete every iteration with its checks
# (-c: the payload of every receive), busy-polling and sleeping on CQ
# events (-e), and each must have seen the other's QPN and GID; umcast's
# counters (UMC_STATS=1) must show every datagram sent once and delivered.
#
# Env: UMC_BIN (umc-run; ctest sets it), UD_PINGPONG_BIN (default:
# ibv_ud_pingpong on PATH).  Skipped (77) without ibv_ud_pingpong.
set -u
# In a network namespace of its own: every umcast process of a namespace
# shares its unicast demultiplexer, and ibv_ud_pingpong, which never
# retransmits, would stall on a datagram lost while another test's process,
# the demultiplexer, exits (umcast(7), UNICAST).
if [ -z "${UMC_UD_PINGPONG_NS:-}" ] && unshare --net true 2>/dev/null; then
	UMC_UD_PINGPONG_NS=1 exec unshare --net -- "$0" "$@"
elif [ -z "${UMC_UD_PINGPONG_NS:-}" ] && unshare --net --map-root-user true 2>/dev/null; then
	UMC_UD_PINGPONG_NS=1 exec unshare --net --map-root-user -- "$0" "$@"
fi
[ -n "${UMC_UD_PINGPONG_NS:-}" ] && ip link set lo up
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"
# shellcheck source=prebuilt_lib.sh
. "$here/prebuilt_lib.sh"

pp=${UD_PINGPONG_BIN:-$(command -v ibv_ud_pingpong 2>/dev/null)}
if [ -z "$pp" ] || [ ! -x "$pp" ]; then
	echo "SKIP: no ibv_ud_pingpong (ibverbs-utils)"
	exit 77
fi
prebuilt_env
export UMC_STATS=1
T=60
N=1000

# Is TCP port $1 listening?  (/proc/net/tcp[6]: local port in hex, state 0A.)
listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

listening_or_gone() {
	listening "$1" || gone "$2"
}

# Counter $2 of umc_lo in NAME's UMC_STATS line (stderr at exit), or empty.
counter() {
	grep '^umcast: umc_lo ' "$WORK/$1.err" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# The local or remote ("local"/"remote") QPN and GID that NAME printed.
address() {
	sed -n "s/.*$2 address: .*QPN \(0x[0-9a-f]*\).*GID \(.*\)\$/\1 \2/p" "$WORK/$1.out"
}

# run NAME OPTIONS...: a server, then (once it listens) a client to it.
run() {
	local name=$1 port=$((18515 + ($$ + RANDOM) % 20000)) pidvar
	shift
	start "${name}_server" $T "$UMC_RUN" "$pp" -d umc_lo -g 0 -p $port -n $N "$@"
	pidvar="PID_${name}_server"
	wait_until 10 listening_or_gone $port "${!pidvar}"
	start "${name}_client" $T "$UMC_RUN" "$pp" -d umc_lo -g 0 -p $port -n $N "$@" 127.0.0.1
	# ibv_ud_pingpong waits for ever for a lost datagram: a bound of its own
	# (1000 round trips take a second; busy-polling both ends under a load
	# of 28 on two CPUs, in the sanitizers' build, more than 20 s).
	finish "${name}_client" 40
	finish "${name}_server" 5
	expect_rc "${name}_server" 0
	expect_rc "${name}_client" 0
	for side in server client; do
		if grep -q "^$N iters in" "$WORK/${name}_$side.out"; then
			pass "${name}_$side: $N iterations"
		else
			fail "${name}_$side did not complete $N iterations"
			show "${name}_$side"
		fi
	done
	# What umcast counted: exactly N datagrams each way, each delivered to
	# a posted receive, none dropped; steered (the default), none passed on
	# by the demultiplexer either.
	local c want
	for side in server client; do
		for c in tx_packets=$N rx_packets=$N rx_delivered=$N rx_no_qp=0 rx_no_recv=0 \
			rx_qkey_viol=0 rx_bad_icrc=0 uc_fwd_dropped=0 \
			uc_forwarded=$([ "${UMC_UC_STEER:-1}" = 0 ] || echo 0); do
			want=${c#*=}
			[ -n "$want" ] || continue
			if [ "$(counter "${name}_$side" "${c%%=*}")" = "$want" ]; then
				pass "${name}_$side: $c"
			else
				fail "${name}_$side: ${c%%=*}='$(counter "${name}_$side" "${c%%=*}")', want $want"
			fi
		done
	done
	# Each side's remote address is the other's local one (QPN, GID).
	local sl cl sr cr
	sl=$(address "${name}_server" local)
	cl=$(address "${name}_client" local)
	sr=$(address "${name}_server" remote)
	cr=$(address "${name}_client" remote)
	if [ -n "$sl" ] && [ "$sl" = "$cr" ] && [ "$cl" = "$sr" ] && [ "$sl" != "$cl" ] &&
		[ "${sl#* }" = "::ffff:127.0.0.1" ] && [ "${cl#* }" = "::ffff:127.0.0.1" ]; then
		pass "$name: server $sl, client $cl"
	else
		fail "$name: server local '$sl' remote '$sr', client local '$cl' remote '$cr'"
	fi
}

echo "# busy-polling, every receive checked"
run poll -c
echo "# sleeping on completion events, every receive checked"
run events -c -e
echo "# 64-byte messages"
run small -c -s 64

summary
