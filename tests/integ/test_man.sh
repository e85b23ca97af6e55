#!/usr/bin/env bash
# test_man.sh - the manual pages as a user gets them after `make install`:
#
#  1. every ibv_* and rdma_* function the library exports (nm -D) and every
#     public inline one of the installed headers has a page in man3, its
#     own or a link to its group's page;
#  2. `man -M PREFIX/share/man NAME` shows umcast's page for
#     rdma_join_multicast_ex (with the InfiniBand send-only rule), for a
#     linked name, for umcast(7) (with its InfiniBand section), umc-mckey(1),
#     umc-perf(1) and umc-sm(8);
#  3. every man3 page has the sections NAME, SYNOPSIS, DESCRIPTION,
#     RETURN VALUE, ERRORS, NOTES (where umcast differs) and SEE ALSO;
#  4. no page shows an option such as --no-sendonly with an en dash, or a
#     quote the user would type as a curly one (pandoc's smart typography);
#  5. every page renders (man(1), groff) without a warning, and no markdown
#     markup leaks into its text: outside code (code blocks, inline code)
#     no word is wrapped in _underscores_ or *asterisks* and no ** is left,
#     which is what pandoc leaves of emphasis it did not take as such.
#
# Env: UMC_BUILD_DIR (a built tree, installed into a temporary prefix) and
# UMC_SOURCE_DIR; ctest sets both.
set -u
build=${UMC_BUILD_DIR:?UMC_BUILD_DIR is set by ctest}
src=${UMC_SOURCE_DIR:?UMC_SOURCE_DIR is set by ctest}
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
prefix=$work/prefix

install_to "$prefix"
mandir=$prefix/share/man

# 1. a page for every public name
exported=$(nm -D --defined-only "$build/lib/libumcast.so" | awk '{print $3}' | sed 's/@.*//' |
	grep -E '^(ibv|rdma)_' | sort -u)
# rdma_seterrno is a helper of rdma_verbs.h (rdma-core documents it nowhere either).
inline=$(grep -hoE '^static inline [^(]*[ *](ibv|rdma)_[a-z0-9_]+\(' \
	"$src"/include/infiniband/*.h "$src"/include/rdma/*.h |
	grep -oE '(ibv|rdma)_[a-z0-9_]+\($' | tr -d '(' | grep -vx rdma_seterrno | sort -u)
[ "$(echo "$exported" | wc -w)" -ge 50 ] || bad "only $(echo "$exported" | wc -w) exported names found"
[ "$(echo "$inline" | wc -w)" -ge 10 ] || bad "only $(echo "$inline" | wc -w) inline names found"
missing=
for n in $exported $inline; do
	[ -s "$mandir/man3/$n.3umcast" ] || missing="$missing $n"
done
if [ -z "$missing" ]; then
	ok "$(echo $exported $inline | wc -w) public names, each with a man3 page"
else
	bad "no man page for:$missing"
fi

# 2. man finds ours
show() {	# show SECTION NAME: the page as man(1) formats it, one paragraph a line
	MANWIDTH=1000 man -M "$mandir" -P cat "$1" "$2" 2>&1 | tr -s ' '
}
check_page() {	# check_page SECTION NAME TITLE TEXT
	local out
	out=$(show "$1" "$2")
	if grep -q "^$3(" <<<"$out" && grep -qF -- "$4" <<<"$out"; then
		ok "man $1 $2: $3, '$4'"
	else
		bad "man $1 $2 does not show umcast's page ($3, '$4'):"
		head -n 20 <<<"$out"
	fi
}
check_page 3 rdma_join_multicast_ex RDMA_JOIN_MULTICAST_EX "RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER"
check_page 3 rdma_join_multicast_ex RDMA_JOIN_MULTICAST_EX "IPv6 groups work on RoCEv2"
check_page 3 rdma_leave_multicast RDMA_JOIN_MULTICAST_EX "rdma_leave_multicast() never blocks"
check_page 3 ibv_post_recv IBV_POST_SEND "40 bytes of a UD receive"
check_page 7 umcast UMCAST "DIFFERENCES FROM LINUX"
check_page 7 umcast UMCAST "SIMULATED INFINIBAND"
check_page 3 rdma_join_multicast_ex RDMA_JOIN_MULTICAST_EX "a Send Only Full Member join on InfiniBand requires SM support, otherwise joining will fail"
check_page 8 umc-sm UMC-SM "--no-sendonly"
check_page 8 umc-sm UMC-SM "RUN-TIME CONTROL"
check_page 1 umc-ctl UMC-CTL "umc-ctl - change a running umcast process or umc-sm"
check_page 1 umc-stat UMC-STAT "stopped in a debugger"
check_page 7 umc-faults UMC-FAULTS "Repeatability"
check_page 1 umc-gapwatch UMC-GAPWATCH "umc-gapwatch - receive a multicast group"
check_page 1 umc-mckey UMC-MCKEY "DIFFERENCES FROM mckey(1)"
check_page 1 umc-perf UMC-PERF "umc-perf"

# 3. the sections of every man3 page (links excepted)
for f in "$mandir"/man3/*.3umcast; do
	grep -q '^\.so ' "$f" && continue
	lack=
	for s in NAME SYNOPSIS DESCRIPTION "RETURN VALUE" ERRORS NOTES "SEE ALSO"; do
		grep -q "^\.SH \"\?$s\"\?\$" "$f" || lack="$lack '$s'"
	done
	[ -z "$lack" ] || bad "$(basename "$f") lacks$lack"
done
[ $fails -eq 0 ] && ok "every man3 page has its sections"

# 4. what the user types is shown as typed
typo=$(grep -lE '\\\[(en|lq|rq)\]' "$mandir"/man?/*.* 2>/dev/null)
if [ -z "$typo" ]; then
	ok "no page turns -- into an en dash or quotes into curly ones"
else
	bad "en dashes or curly quotes (smart typography) in:" $typo
fi

# 5. every page renders cleanly, with no markdown left in its text
leaks=0
for f in "$mandir"/man?/*.*; do
	grep -q '^\.so ' "$f" && continue
	w=$(MANWIDTH=80 man --warnings -l -P cat "$f" 2>&1 >/dev/null)
	[ -z "$w" ] || { bad "$(basename "$f") renders with warnings: $w"; leaks=1; }
	# The text outside code: no .nf/.fi blocks, no \f[C]/\f[V] spans, no font escapes.
	hits=$(awk '/^\.nf/ { c = 1; next } /^\.fi/ { c = 0; next } !c && !/^\.\\"/' "$f" |
		sed -E 's/\\f\[[CV]\]([^\\]|\\[^f])*\\f\[R\]//g; s/\\f(\[[A-Z]*\]|[BIRP])//g' |
		grep -nE '(^|[^[:alnum:]_])_[[:alnum:]]([^_[:space:]]*[[:alnum:]])?_($|[^[:alnum:]_])|(^|[^[:alnum:]*])\*[[:alnum:]]([^*]*[[:alnum:]])?\*($|[^[:alnum:]*])|\*\*')
	[ -z "$hits" ] || { bad "$(basename "$f") shows markup: $hits"; leaks=1; }
done
[ $leaks = 0 ] && ok "every page renders without warnings or leftover markup"

summary
