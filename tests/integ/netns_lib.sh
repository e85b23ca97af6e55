# shellcheck shell=bash
# netns_lib.sh - two hosts for IPv6 multicast tests (sourced, not a test).
#
# veth_hosts_v6 NSA NSB PREFIX: namespaces NSA and NSB joined by a veth pair
# (veth-a in NSA with PREFIX::1/64, veth-b in NSB with PREFIX::2/64, no
# duplicate address detection), every link up, and, bounded, the ff00::/8
# multicast route the kernel adds once the link has carrier.  Returns
# non-zero when the namespaces cannot be made (not root, say); the caller
# deletes them.
veth_hosts_v6() {
	local a=$1 b=$2 p=$3 ns
	ip netns add "$a" 2>/dev/null && ip netns add "$b" || return 1
	ip -n "$a" link add veth-a type veth peer name veth-b netns "$b" || return 1
	ip -n "$a" addr add "$p::1/64" dev veth-a nodad
	ip -n "$b" addr add "$p::2/64" dev veth-b nodad
	for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
	ip -n "$a" link set veth-a up
	ip -n "$b" link set veth-b up
	for ns in "$a" "$b"; do
		for _ in $(seq 100); do
			ip -n "$ns" -6 route show table local | grep -q '^multicast ff00::/8' && break
			sleep 0.05	# bounded: 5 s at most
		done
	done
}
