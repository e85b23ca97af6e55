# shellcheck shell=bash
# fabric_lib.sh - the switched test fabric (sourced by the tests, and by
# fabric.sh, which makes one by hand).
#
# A fabric is a set of network namespaces named $FAB-ROLE, FAB being
# umcfab<OWNER>-<TAG> (OWNER: the pid of the shell that owns the fabric, 0
# for one made by hand; TAG: random), so that runs never share a name:
#
#   sw      the switch: one Linux bridge per segment, br0 and br1, with
#           multicast snooping and a querier (IGMPv3 and MLDv2, or IGMPv2
#           with -2; timers short enough that a test sees several query
#           rounds), and their ports, named <host>s<segment>
#   HOST    a host: one veth per segment it is on (eth0, eth1, ... in the
#           order given), lo up
#   rt      with -r, the router: on segments 0 and 1 (switch ports rts0,
#           rts1, each a multicast router port of its bridge, so that every
#           group's traffic reaches it), forwarding IPv4 and IPv6 unicast,
#           with no multicast routing, so that no multicast crosses
#
# Addresses on segment S (0 or 1), host number K (its place in the list,
# from 1): 10.77.<S+1>.K/24 and fd77:<S+1>::K/64, link-local fe80::K; the
# bridge .250 / ::fa (the querier's source), the router .254 / ::fe (the
# hosts' default route in the routed variant).  Each host knows the
# bridge's MAC (a permanent neighbour), so a marker datagram (fab_mark)
# leaves at once.
#
# Nothing is created outside the fabric's namespaces: every link lives in
# one of them.  fab_down kills every process in them (ip netns pids) and
# deletes them; fab_gone checks that nothing is left (namespaces, processes
# in them, by namespace inode, links).  A fabric whose owner died without
# cleaning up (SIGKILL) is removed by the next fab_new.

# shellcheck source=../lib/wait.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/wait.sh" # wait_until, gone

FAB_TIMEOUT=${FAB_TIMEOUT:-90}	# every process started in the fabric ends by then (s)
declare -gA FAB_PID FAB_FD FAB_SEEN FAB_IFX
declare -ga FAB_HOSTS FAB_FAILS FAB_NSFD

fab_log() { printf '# %s\n' "$*"; }
fab_fail() {
	printf 'FAIL: %s\n' "$*"
	FAB_FAILS+=("$*")
}

# fab_reap: remove fabrics whose owner process is gone.
fab_reap() {
	local ns owner
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		case $ns in umcfab*-*-*) ;; *) continue ;; esac
		owner=${ns#umcfab}
		owner=${owner%%-*}
		[ "$owner" != 0 ] && ! kill -0 "$owner" 2>/dev/null || continue
		fab_ns_del "$ns"
	done
}

# fab_new [OWNER]: name a new fabric ($FAB) and its work directory
# ($FAB_WORK, kept when a check failed or KEEP_WORK is set).
# shellcheck disable=SC2120 # OWNER: fabric.sh gives 0
fab_new() {
	local owner=${1:-$$}
	fab_reap
	FAB=umcfab$owner-$(printf '%04x' $((RANDOM)))
	FAB_WORK=$(mktemp -d "${TMPDIR:-/tmp}/$FAB.XXXXXX")
	FAB_HOSTS=() FAB_FAILS=()
}

fab_ns() { printf '%s-%s' "$FAB" "$1"; }

# fab_x ROLE CMD...: run CMD in namespace ROLE (sw, rt or a host).
fab_x() {
	local role=$1
	shift
	ip netns exec "$(fab_ns "$role")" "$@"
}

# fab_num HOST: its number K.
fab_num() {
	local i
	for i in "${!FAB_HOSTS[@]}"; do
		[ "${FAB_HOSTS[$i]%%:*}" = "$1" ] && { echo $((i + 1)); return 0; }
	done
	return 1
}

# fab_segs HOST: its segments, in order ("0 1").
fab_segs() {
	local h
	for h in "${FAB_HOSTS[@]}"; do
		[ "${h%%:*}" = "$1" ] && { echo "${h#*:}" | tr , ' '; return 0; }
	done
	return 1
}

# fab_addr HOST [4|6] [SEG]: its address (default: IPv4, first segment).
fab_addr() {
	local k s=${3:-}
	k=$(fab_num "$1") || return 1
	[ -n "$s" ] || { s=$(fab_segs "$1"); s=${s%% *}; }
	if [ "${2:-4}" = 6 ]; then echo "fd77:$((s + 1))::$(printf %x "$k")"; else echo "10.77.$((s + 1)).$k"; fi
}

# fab_port HOST [SEG]: the host's bridge port (in sw).
fab_port() {
	local s=${2:-}
	[ -n "$s" ] || { s=$(fab_segs "$1"); s=${s%% *}; }
	echo "${1}s$s"
}

# fab_link NS_A IF_A NS_B IF_B: a veth pair between two namespaces, with
# no IPv6 address of its own making (fab_addrs gives them).
fab_link() {
	ip -n "$1" link add "$2" type veth peer name "$4" netns "$3" || return 1
	ip -n "$1" link set "$2" addrgenmode none
	ip -n "$3" link set "$4" addrgenmode none
}

# fab_addrs NS IF S K: segment S's addresses number K on IF, and up.
fab_addrs() {
	ip -n "$1" addr add "10.77.$(($3 + 1)).$4/24" dev "$2" &&
		ip -n "$1" addr add "fd77:$(($3 + 1))::$(printf %x "$4")/64" dev "$2" nodad &&
		ip -n "$1" addr add "fe80::$(printf %x "$4")/64" dev "$2" nodad &&
		ip -n "$1" link set "$2" up
}

# fab_up [-r] [-2] HOST:SEG[,SEG]...: make the fabric.  -r: routed (a
# router joins segments 0 and 1); -2: the querier speaks IGMPv2 (the hosts
# then answer in IGMPv2; MLDv2 unchanged).  Returns non-zero, with the
# reason on stdout, when it cannot be made.
fab_up() {
	local routed=0 igmp=3 opt h name segs s k port sw ns i mac born
	OPTIND=1
	while getopts r2 opt; do
		case $opt in
		r) routed=1 ;;
		2) igmp=2 ;;
		*) return 2 ;;
		esac
	done
	shift $((OPTIND - 1))
	FAB_HOSTS=("$@")
	sw=$(fab_ns sw)
	ip netns add "$sw" || { echo "cannot create network namespaces"; return 1; }
	segs=$(printf '%s\n' "${FAB_HOSTS[@]#*:}" | tr , '\n' | sort -u)
	[ $routed = 1 ] && segs=$(printf '0\n1\n%s\n' "$segs" | sort -u)
	for s in $segs; do
		# Snooping with our own querier: general queries every 2 s (the
		# hosts answer within 0.5 s), memberships that expire after 5 s
		# without a report, two group-specific queries 0.3 s apart on a
		# leave.  Intervals are in centiseconds.
		ip -n "$sw" link add "br$s" type bridge mcast_snooping 1 mcast_querier 0 \
			mcast_igmp_version $igmp mcast_mld_version 2 mcast_query_use_ifaddr 1 \
			mcast_query_interval 200 mcast_query_response_interval 50 \
			mcast_membership_interval 500 mcast_querier_interval 450 \
			mcast_last_member_interval 30 mcast_startup_query_interval 100 ||
			{ echo "cannot create bridge br$s"; return 1; }
		# The querier only now: it waits one query response interval for
		# another querier, and would read the interval before the line
		# above set it, if both came in one request (the default: 10 s).
		ip -n "$sw" link set "br$s" type bridge mcast_querier 1
		born=${EPOCHREALTIME/./}
		ip -n "$sw" link set "br$s" addrgenmode none
		fab_addrs "$sw" "br$s" "$s" 250 || return 1
	done
	for h in "${FAB_HOSTS[@]}"; do
		name=${h%%:*}
		k=$(fab_num "$name")
		ns=$(fab_ns "$name")
		ip netns add "$ns" || return 1
		ip -n "$ns" link set lo up
		i=0
		for s in $(fab_segs "$name"); do
			port=$(fab_port "$name" "$s")
			fab_link "$sw" "$port" "$ns" "eth$i" || { echo "cannot create veth $port"; return 1; }
			ip -n "$sw" link set "$port" master "br$s" up
			fab_addrs "$ns" "eth$i" "$s" "$k" || return 1
			mac=$(ip -n "$sw" link show "br$s" | awk '$1 == "link/ether" {print $2}')
			ip -n "$ns" neigh replace "10.77.$((s + 1)).250" lladdr "$mac" dev "eth$i" nud permanent
			i=$((i + 1))
		done
		if [ $routed = 1 ]; then
			s=$(fab_segs "$name")
			s=${s%% *}
			ip -n "$ns" route add default via "10.77.$((s + 1)).254"
			ip -n "$ns" -6 route add default via "fd77:$((s + 1))::fe"
		fi
	done
	if [ $routed = 1 ]; then
		ns=$(fab_ns rt)
		ip netns add "$ns" || return 1
		ip -n "$ns" link set lo up
		for s in 0 1; do
			fab_link "$sw" "rts$s" "$ns" "eth$s" || return 1
			ip -n "$sw" link set "rts$s" master "br$s" up
			# A multicast router's port, as a switch learns it: every
			# group's traffic goes there, so that what does not cross
			# is the router's doing.
			fab_x sw bridge link set dev "rts$s" mcast_router 2
			fab_addrs "$ns" "eth$s" "$s" 254 || return 1
		done
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	fi
	# The switch's ports by ifindex, for the captures (sll.ifindex).
	FAB_IFX=()
	while read -r i name; do
		FAB_IFX[$i]=${name%%@*}
	done < <(ip -n "$sw" -o link show | awk -F': ' '{print $1, $2}')
	# The namespaces' inodes, to find any process left in one after the end;
	# each held open until then, so that no new namespace can take the
	# inode of one of ours that is gone.
	: >"$FAB_WORK/inodes"
	for ns in $(ip netns list | awk -v p="$FAB-" 'index($1, p) == 1 {print $1}'); do
		exec {i}<"/run/netns/$ns"
		FAB_NSFD+=("$i")
		stat -L -c %i "/run/netns/$ns" >>"$FAB_WORK/inodes"
	done
	[ $igmp = 2 ] && { fab_igmp_mode 2 || return 1; }
	# A bridge whose querier was just switched on waits one query response
	# interval (0.5 s) for another querier before it counts its own as
	# present, and floods every group until then (net/bridge/
	# br_multicast.c: br_multicast_set_querier() arms other_query's
	# delay_timer; __br_multicast_querier_exists()).  Wait for its end.
	i=$((born + 600000 - ${EPOCHREALTIME/./}))
	[ $i -le 0 ] || sleep "0.$(printf %06d $i)"
	return 0
}

# fab_igmp_mode V: wait (bounded) until every host interface has heard the
# querier and speaks IGMPv V (/proc/net/igmp).
fab_igmp_mode() {
	wait_until 5 fab_igmp_all "$1" && return 0
	fab_fail "not every host interface speaks IGMPv$1"
	return 1
}

# fab_igmp_all V: every host interface speaks IGMPv V.
fab_igmp_all() {
	local h
	for h in "${FAB_HOSTS[@]}"; do
		fab_x "${h%%:*}" awk -v v="V$1" '$2 ~ /^eth/ && $5 != v {bad = 1} END {exit bad}' \
			/proc/net/igmp || return 1
	done
}

# fab_ns_del NS: end every process in namespace NS (TERM, then KILL),
# then delete it.  Bounded: a few seconds at most.
fab_ns_del() {
	local ns=$1 sig
	for sig in TERM KILL; do
		fab_ns_empty "$ns" && break
		# shellcheck disable=SC2046 # a list of pids
		kill -s $sig $(ip netns pids "$ns" 2>/dev/null) 2>/dev/null
		wait_until 3 fab_ns_empty "$ns"
	done
	ip netns del "$ns" 2>/dev/null
}

# fab_ns_empty NS: no process is in namespace NS.
fab_ns_empty() { [ -z "$(ip netns pids "$1" 2>/dev/null)" ]; }

# fab_down: end every process of the fabric and delete its namespaces.
fab_down() {
	local ns fd
	[ -n "${FAB:-}" ] || return 0
	for fd in "${FAB_FD[@]}"; do exec {fd}>&- 2>/dev/null; done
	FAB_FD=()
	for ns in $(ip netns list 2>/dev/null | awk -v p="$FAB-" 'index($1, p) == 1 {print $1}'); do
		fab_ns_del "$ns"
	done
}

# fab_gone: check that nothing of the fabric is left: no namespace of its
# name, no process in one of its namespaces (by inode), no link in this
# namespace that names it.  Returns non-zero, saying what is left.
fab_gone() {
	local left ino fd procs=""
	left=$(ip netns list 2>/dev/null | awk -v p="$FAB-" 'index($1, p) == 1 {print $1}')
	[ -z "$left" ] || { echo "left: namespaces $left"; return 1; }
	if [ -s "$FAB_WORK/inodes" ]; then
		for ino in $(cat "$FAB_WORK/inodes"); do
			procs+=$(find /proc/[0-9]*/ns/net -maxdepth 0 -lname "net:\[$ino\]" 2>/dev/null |
				cut -d/ -f3 | tr '\n' ' ')
		done
	fi
	for fd in "${FAB_NSFD[@]}"; do exec {fd}<&-; done
	FAB_NSFD=()
	[ -z "$procs" ] || { echo "left: processes $procs"; return 1; }
	left=$(ip -o link show 2>/dev/null | grep -F "$FAB")
	[ -z "$left" ] || { echo "left: links $left"; return 1; }
	return 0
}

# fab_end: fab_down, fab_gone, and the verdict, for an EXIT trap: exit
# status 1 when a check failed (FAB_FAILS) or something of the fabric is
# left, else the status the shell was exiting with.  The work directory is
# kept when that is neither 0 nor 77 (skipped), or with KEEP_WORK set.
fab_end() {
	local rc=$? why
	trap - EXIT INT TERM HUP
	fab_down
	why=$(fab_gone) || fab_fail "the fabric was not removed: $why"
	if [ ${#FAB_FAILS[@]} -gt 0 ]; then
		echo "FAIL: ${#FAB_FAILS[@]} check(s) failed; outputs kept in $FAB_WORK"
		exit 1
	fi
	case $rc in
	0 | 77)
		if [ -n "${KEEP_WORK:-}" ]; then echo "# outputs kept in $FAB_WORK"; else rm -rf "$FAB_WORK"; fi
		;;
	*) echo "FAIL: exit status $rc; outputs kept in $FAB_WORK" ;;
	esac
	exit "$rc"
}

# fab_test_init: what every test does first: skip (77) where the fabric
# cannot be made, name it, and remove it at any exit or signal.
fab_test_init() {
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
	local c
	for c in ip bridge tshark dumpcap; do
		command -v $c >/dev/null 2>&1 || { echo "SKIP: $c not installed"; exit 77; }
	done
	fab_new
	trap fab_end EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
}

# --- processes ----------------------------------------------------------------

# fab_bg NAME ROLE [VAR=VALUE...] CMD...: start CMD in namespace ROLE in
# the background, stdin from FAB_STDIN (default /dev/null), stdout in
# $FAB_WORK/NAME.out, stderr in NAME.err, under timeout(1): ended after
# FAB_TIMEOUT seconds at the latest.  FAB_PID[NAME] is timeout's pid (a
# signal to it goes on to CMD), fab_child NAME CMD's.
fab_bg() {
	local name=$1 role=$2 env=()
	shift 2
	while [ $# -gt 0 ] && [ "${1#*=}" != "$1" ]; do env+=("$1"); shift; done
	# A simple command, not a function, so that $! is the process itself.
	ip netns exec "$(fab_ns "$role")" env "${env[@]}" timeout -k 5 "$FAB_TIMEOUT" "$@" \
		<"${FAB_STDIN:-/dev/null}" >"$FAB_WORK/$name.out" 2>"$FAB_WORK/$name.err" &
	FAB_PID[$name]=$!
}

# fab_child NAME: the pid of the command fab_bg or fab_member started (the
# child of timeout(1)), once timeout has started it (bounded: 2 s).
fab_child() {
	local p=${FAB_PID[$1]} c
	wait_until 2 fab_has_child "$p" || return 1
	c=$(cat "/proc/$p/task/$p/children")
	echo "${c%% *}"
}
# (a /proc file's size is 0: read it)
fab_has_child() { [ -n "$(cat "/proc/$1/task/$1/children" 2>/dev/null)" ]; }

# fab_wait NAME SECS: wait for NAME to end, at most SECS, then kill it; its
# exit status (124 if it had to be killed).
fab_wait() {
	local pid=${FAB_PID[$1]} rc=0
	if ! wait_until "$2" gone "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 124
	fi
	wait "$pid" || rc=$?
	return $rc
}

# fab_member NAME HOST BIND GROUP [IDS] [VAR=VALUE...]: start fab_member
# (one application process) on HOST, and wait for it to be ready.
fab_member() {
	local name=$1 host=$2 bind=$3 group=$4 ids=${5:-1} fd
	shift 4
	[ $# -gt 0 ] && shift
	mkfifo "$FAB_WORK/$name.in"
	FAB_STDIN=$FAB_WORK/$name.in fab_bg "$name" "$host" "$@" "$UMC_BIN/fab_member" "$bind" "$group" "$ids"
	exec {fd}>"$FAB_WORK/$name.in"
	FAB_FD[$name]=$fd
	FAB_SEEN[$name]=0
	fab_reply "$name" 10 || { fab_fail "$name did not start: $(cat "$FAB_WORK/$name.err")"; return 1; }
	case $FAB_REPLY in ready*) return 0 ;; esac
	fab_fail "$name: $FAB_REPLY"
	return 1
}

# fab_reply NAME SECS: the member's next reply line, in FAB_REPLY, within
# SECS (and not after the member ended without it).
fab_reply() {
	local n=$((FAB_SEEN[$1] + 1))
	FAB_REPLY=
	wait_until "$2" fab_reply_in "$1" $n
	[ -n "$FAB_REPLY" ] && FAB_SEEN[$1]=$n && return 0
	FAB_REPLY="(no reply within $2 s)"
	return 1
}

# fab_reply_in NAME N: line N of NAME's output is there (in FAB_REPLY), or
# NAME has ended and it never will be.
fab_reply_in() {
	local alive=0
	# Alive before the read: a member that has ended wrote all it will.
	kill -0 "${FAB_PID[$1]}" 2>/dev/null && alive=1
	FAB_REPLY=$(sed -n "${2}p" "$FAB_WORK/$1.out")
	[ -n "$FAB_REPLY" ] || [ $alive = 0 ]
}

# fab_send NAME COMMAND...: send a command, not waiting for its reply (for
# commands to several members that run at once; fab_reply then).
fab_send() {
	local name=$1
	shift
	local fd=${FAB_FD[$name]}
	echo "$*" 1>&"$fd" 2>/dev/null
}

# fab_cmd NAME SECS COMMAND...: send a command, wait for its reply
# (FAB_REPLY); non-zero when there was none or it is an error.
fab_cmd() {
	local name=$1 secs=$2
	shift 2
	fab_send "$name" "$@"
	fab_reply "$name" "$secs" || { fab_fail "$name: '$*': $FAB_REPLY"; return 1; }
	case $FAB_REPLY in error*) return 1 ;; esac
	return 0
}

# fab_expect_got WHO N SRC TTL [only]: member WHO (NAME, or NAME:ID for one
# of its ids) has received N distinct messages in all, every one intact,
# the last from SRC with TTL (hop limit) TTL ("-" and 0 when N is 0).  It
# waits for the N-th, at most 3 s without a new one; with "only" (and for
# N = 0) 0.5 s for one more, which must not come.
fab_expect_got() {
	local w=$1 want=$2 idle=3000 id=
	[ "${w#*:}" != "$w" ] && id=${w#*:}
	if [ "$2" = 0 ] || [ "${5:-}" = only ]; then want=$(($2 + 1)) idle=500; fi
	fab_cmd "${w%:*}" 10 expect "$want" "$idle" $id
	fab_expect_eq "$w, messages received" "$FAB_REPLY" "got $2 dup 0 bad 0 src $3 ttl $4"
}

# fab_quit NAME: end a member; its exit status.  Its UMC_STATS counters (if
# it had UMC_STATS=1) are then in $FAB_WORK/NAME.err.
fab_quit() {
	local fd=${FAB_FD[$1]}
	fab_cmd "$1" 10 quit
	exec {fd}>&-
	unset "FAB_FD[$1]"
	fab_wait "$1" 10
}

# fab_sock_drops NAME HOST: the datagrams the kernel dropped because a
# receive buffer of member NAME's UDP sockets was full (the drops column of
# /proc/net/udp and udp6 in HOST; while NAME runs).
fab_sock_drops() {
	local pid inodes
	pid=$(fab_child "$1")
	# shellcheck disable=SC2012 # socket:[INODE] links, no file names
	inodes=$(ls -l "/proc/$pid/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | tr '\n' ' ')
	fab_x "$2" awk -v list=" $inodes " 'FNR > 1 && index(list, " " $10 " ") {n += $NF} END {print n + 0}' \
		/proc/net/udp /proc/net/udp6
}

# fab_counter NAME DEV COUNTER: a counter of device DEV in NAME's UMC_STATS
# output (after it ended).
fab_counter() {
	awk -v d="$2" -v c="$3=" '$1 == "umcast:" && $2 == d {
		for (i = 3; i <= NF; i++) if (index($i, c) == 1) { print substr($i, length(c) + 1); exit }
	}' "$FAB_WORK/$1.err"
}

# --- captures and the switch's state ------------------------------------------

# fab_cap_start HOST [FILTER]: capture on every port of the switch (one
# dumpcap on "any" in sw: cooked headers that tell the port and the
# direction), live once marker "start" from HOST is in the file.
fab_cap_start() {
	fab_bg cap sw dumpcap -q -i any -y LINUX_SLL2 -B 16 \
		-f "${2:-not tcp}" -w "$FAB_WORK/cap.pcapng"
	wait_until 10 grep -qs '^File:' "$FAB_WORK/cap.err" && fab_cap_sync "$1" start && return 0
	fab_fail "capture did not start: $(cat "$FAB_WORK/cap.err")"
	return 1
}

# fab_cap_sync HOST TEXT: send marker TEXT from HOST (fab_mark), again
# every 0.1 s, until the capture file holds it (dumpcap writes its file in
# batches): then everything before it was captured.  Bounded: 5 s.
fab_cap_sync() {
	FAB_MARKS=0
	wait_until 5 fab_cap_has "$1" "$2"
}

# fab_cap_has HOST TEXT: the capture file holds marker TEXT; if not, every
# fifth call sends it (again).
fab_cap_has() {
	grep -aqF "fabmark $2" "$FAB_WORK/cap.pcapng" 2>/dev/null && return 0
	[ $((FAB_MARKS++ % 5)) = 0 ] && fab_mark "$1" "$2"
	return 1
}

# fab_mark HOST TEXT: a marker datagram from HOST (its first interface) to
# the bridge, UDP port 9, that orders the capture: its table (fab_cap_stop)
# shows it as "mark TEXT".
fab_mark() {
	local s
	s=$(fab_segs "$1")
	s=${s%% *}
	fab_x "$1" bash -c 'printf "fabmark %s" "$1" >"/dev/udp/$2/9"' _ "$2" "10.77.$((s + 1)).250"
}

# fab_cap_stop HOST: marker "end" from HOST (fab_cap_sync), end the capture
# and write its table, $FAB_WORK/cap.txt, one line per packet (per group
# record for IGMP/MLD reports):
#   FRAME PORT DIR KIND SOURCE GROUP DETAIL
# PORT: the switch port (or brN); DIR: "in" from the host into the switch,
# "out" from the switch to the host; KIND and DETAIL:
#   report  a report that the host is a member (IGMPv3/MLDv2 records
#           CHANGE_TO_EXCLUDE, MODE_IS_EXCLUDE; IGMPv2 report), DETAIL the
#           record type (or v2)
#   leave   a report that it is not (CHANGE_TO_INCLUDE, MODE_IS_INCLUDE
#           with no source; IGMPv2 leave), DETAIL as above
#   query   a query (GROUP: the group asked for, or 0)
#   data    a datagram to UDP 4791 (RoCEv2) or 4796 (umc-sm's data port),
#           DETAIL its TTL / hop limit
#   mark    a marker (fab_mark), GROUP its text
fab_cap_stop() {
	fab_cap_sync "$1" end || fab_fail "marker 'end' not captured"
	kill -INT "${FAB_PID[cap]}" 2>/dev/null
	fab_wait cap 10 || fab_fail "the capture did not end"
	tshark -n -r "$FAB_WORK/cap.pcapng" -T fields -E separator='|' -E occurrence=a \
		-e frame.number -e sll.ifindex -e sll.pkttype -e ip.src -e ipv6.src -e ip.dst \
		-e ipv6.dst -e ip.ttl -e ipv6.hlim -e udp.dstport -e igmp.type -e igmp.maddr \
		-e igmp.record_type -e igmp.num_src -e icmpv6.type -e icmpv6.mldr.mar.multicast_address \
		-e icmpv6.mldr.mar.record_type -e icmpv6.mldr.mar.nb_sources \
		-e icmpv6.mld.multicast_address -e data.data 2>"$FAB_WORK/tshark.err" |
		awk -F'|' -v ifx="$(for i in "${!FAB_IFX[@]}"; do printf '%s=%s ' "$i" "${FAB_IFX[$i]}"; done)" '
		BEGIN { n = split(ifx, a, " "); for (i = 1; i <= n; i++) { split(a[i], kv, "="); port[kv[1]] = kv[2] } }
		function hex(c) { return index("0123456789abcdef", c) - 1 }
		function out(kind, grp, detail) {
			print $1, (($2 in port) ? port[$2] : "if" $2), ($3 == 4 ? "out" : "in"), kind, src, grp, detail
		}
		function records(addrs, types, nsrc, tag,   na, i) {
			na = split(addrs, A, ","); split(types, T, ","); split(nsrc, S, ",")
			for (i = 1; i <= na; i++) {
				if (T[i] == 2 || T[i] == 4) out("report", A[i], tag T[i])
				else if ((T[i] == 1 || T[i] == 3) && S[i] == 0) out("leave", A[i], tag T[i])
			}
		}
		{
			src = $4 != "" ? $4 : $5; dst = $6 != "" ? $6 : $7; ttl = $8 != "" ? $8 : $9
			split($10, dport, ",")
			if ($11 == "0x22") records($12, $13, $14, "v3:")
			else if ($11 == "0x16" || $11 == "0x12") out("report", $12, "v2")
			else if ($11 == "0x17") out("leave", $12, "v2")
			else if ($11 == "0x11") out("query", $12 == "" ? 0 : $12, "")
			else if ($15 == 143) records($16, $17, $18, "v2:")
			else if ($15 == 131) out("report", $19, "v1")
			else if ($15 == 132) out("leave", $19, "v1")
			else if ($15 == 130) out("query", $19 == "" ? 0 : $19, "")
			else if (dport[1] == 4791 || dport[1] == 4796) out("data", dst, ttl)
			else if (dport[1] == 9 && $20 ~ /^6661626d61726b20/) {
				t = ""
				for (i = 17; i < length($20); i += 2)
					t = t sprintf("%c", 16 * hex(substr($20, i, 1)) + hex(substr($20, i + 1, 1)))
				out("mark", t, "")
			}
		}' >"$FAB_WORK/cap.txt"
}

# fab_count AWK-CONDITION: how many lines of cap.txt match ($1 FRAME, $2
# PORT, $3 DIR, $4 KIND, $5 SOURCE, $6 GROUP, $7 DETAIL; FROM and UPTO the
# frames of two markers bound it when set with fab_span).
fab_count() {
	awk -v lo="${FAB_LO:-0}" -v hi="${FAB_HI:-1e18}" "\$1 > lo && \$1 < hi && ($1) {n++} END {print n + 0}" \
		"$FAB_WORK/cap.txt"
}

# fab_span [FROM [UPTO]]: limit fab_count to the frames between the markers
# FROM and UPTO (their first copy entering the switch); no argument: all.
fab_span() {
	FAB_LO=0 FAB_HI=1e18
	[ -n "${1:-}" ] && FAB_LO=$(awk -v m="$1" '$4 == "mark" && $6 == m && $3 == "in" {print $1; exit}' "$FAB_WORK/cap.txt")
	[ -n "${2:-}" ] && FAB_HI=$(awk -v m="$2" '$4 == "mark" && $6 == m && $3 == "in" {print $1; exit}' "$FAB_WORK/cap.txt")
	[ -n "$FAB_LO" ] && [ -n "$FAB_HI" ] && return 0
	fab_fail "marker ${1:-} or ${2:-} not in the capture"
	FAB_LO=0 FAB_HI=0
	return 1
}

# fab_mdb GROUP: the switch ports that the bridges forward GROUP to
# (bridge mdb), sorted, space-separated; the bridges themselves left out.
fab_mdb() {
	fab_x sw bridge mdb show |
		awk -v g="$1" '$1 == "dev" && $5 == "grp" && $6 == g && $4 !~ /^br[0-9]$/ {print $4}' |
		sort -u | tr '\n' ' ' | sed 's/ $//'
}

# fab_q PORT DIR KIND [GROUP]: the fab_count condition for those fields
# ("" or - for any).
fab_q() {
	local c="1" i=2 v
	for v in "$1" "$2" "$3" "${4:-}"; do
		[ -n "$v" ] && [ "$v" != - ] && c+=" && \$$i == \"$v\""
		[ $i = 4 ] && i=6 || i=$((i + 1))
	done
	echo "$c"
}

# fab_expect_eq WHAT GOT WANT: a check.
fab_expect_eq() {
	if [ "$2" = "$3" ]; then
		echo "ok: $1: $2"
	else
		fab_fail "$1: got '$2', want '$3'"
	fi
}

# fab_expect_count WHAT CONDITION eq|ge N: a check of fab_count CONDITION.
fab_expect_count() {
	local n
	n=$(fab_count "$2")
	if { [ "$3" = eq ] && [ "$n" -eq "$4" ]; } || { [ "$3" = ge ] && [ "$n" -ge "$4" ]; }; then
		echo "ok: $1: $n"
	else
		fab_fail "$1: $n, want $3 $4"
	fi
}

# fab_expect_mdb GROUP WANT [SECS]: the bridge's ports for GROUP (fab_mdb)
# are WANT, at once or within SECS (a leave takes the bridge's last member
# queries: 0.6 s).
fab_expect_mdb() {
	wait_until "${3:-0}" fab_mdb_is "$1" "$2"
	fab_expect_eq "bridge mdb ports for $1" "$(fab_mdb "$1")" "$2"
}

# fab_mdb_is GROUP WANT: fab_mdb GROUP is WANT.
fab_mdb_is() { [ "$(fab_mdb "$1")" = "$2" ]; }
