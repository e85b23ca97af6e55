#!/usr/bin/env bash
# test_man_examples.sh PAGE.md... - the manual pages' EXAMPLES run as
# written, with the tools as `make install` puts them (a temporary prefix
# on PATH); ctest runs it once for each page that has EXAMPLES:
#
#  1. the EXAMPLES section of the page holds only fenced blocks marked
#     `sh` (commands a user pastes into a shell) or `text` (what they
#     print); an unmarked block is a failure, so none escapes the test;
#  2. every `sh` block, pasted into a new bash of its own, succeeds: each
#     command exits 0 (bash -e), and so does every background job that
#     has ended when the block does (a bare `wait` in a block fails when
#     one of the jobs it waits for failed); jobs still running at the end
#     (a umc-sm started with &) are stopped;
#  3. every line of a `text` block is a line of what the `sh` block before
#     it printed (stdout and stderr, leading and trailing blanks aside).
#
# Each block runs in a directory of its own, with Debian's PATH after the
# prefix's bin (what a new user has), in a private network namespace with
# only lo, up, so that
# the pages' fixed groups and umc-sm's default port meet no other test;
# that needs root (skipped, 77, otherwise), as the pages' root-only
# examples do.  Each block is bounded (90 s) and every process it started
# is gone after it.
#
# Env: UMC_BUILD_DIR (ctest sets it), UMC_SANITIZE.
set -u
[ $# -gt 0 ] || { echo "usage: $0 PAGE.md..."; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ] || ! unshare -n true 2>/dev/null; then
	echo "SKIP: the examples run in network namespaces of their own (root)"
	exit 77
fi
# shellcheck source=prebuilt_lib.sh
. "$here/prebuilt_lib.sh"
# shellcheck source=check_lib.sh
. "$here/check_lib.sh"

prefix=$work/prefix
install_to "$prefix"
prebuilt_env # umc-run's drop-in library may be sanitized; mckey is not

# The prologue and epilogue of every block (2.).
cat >"$work/prologue.sh" <<'EOF'
set -e
wait() {	# a bare wait fails when a job it waits for failed
	local p s=0
	[ $# -gt 0 ] && { builtin wait "$@"; return; }
	for p in $(jobs -p); do builtin wait "$p" || s=$?; done
	return $s
}
EOF
cat >"$work/epilogue.sh" <<'EOF'
stopped=" $(jobs -pr | tr '\n' ' ') "
for p in $stopped; do kill "$p" 2>/dev/null || true; done
for p in $(jobs -p); do
	builtin wait "$p" && continue
	s=$?
	case $stopped in *" $p "*) continue ;; esac
	echo "example: a background job (pid $p) exited with status $s"
	exit 1
done
EOF

# run_block NAME FILE: the block in FILE, as above; its output in NAME.out.
run_block() {
	local name=$1 file=$2 rc pid
	mkdir -p "$work/$name.d"
	cat "$work/prologue.sh" "$file" "$work/epilogue.sh" >"$work/$name.sh"
	(
		cd "$work/$name.d" &&
			PATH=$prefix/bin:/usr/sbin:/usr/bin:/sbin:/bin exec unshare -n -- timeout -k 5 90 \
				bash -c 'ip link set lo up && exec bash "$1"' block "$work/$name.sh"
	) >"$work/$name.out" 2>&1 &
	pid=$!
	wait "$pid"
	rc=$?
	kill -KILL -- "-$pid" 2>/dev/null # what is left of it (timeout leads the group)
	return $rc
}

for page in "$@"; do
	n=0
	pname=$(basename "$page" .md)
	# The EXAMPLES section's fenced blocks, one file each: B<k>.<info>.
	rm -f "$work"/B*
	awk -v dir="$work" '
		/^# / { inex = ($0 == "# EXAMPLES"); next }
		!inex { next }
		/^```/ {
			if (!infence) { infence = 1; k++; info = substr($0, 4); if (info == "") info = "none"
				file = sprintf("%s/B%02d.%s", dir, k, info); printf "" > file }
			else { infence = 0; close(file) }
			next }
		infence { print > file }' "$page"
	prev=
	for b in "$work"/B*; do
		[ -e "$b" ] || continue
		k=$(basename "$b")
		info=${k#*.}
		label="$pname EXAMPLES block ${k%%.*}"
		case $info in
		sh)
			n=$((n + 1))
			prev="$pname-${k%%.*}"
			if run_block "$prev" "$b"; then
				ok "$label runs: $(head -n 1 "$b")"
			else
				bad "$label failed (exit $?):"
				sed 's/^/    | /' "$b"
				sed 's/^/    > /' "$work/$prev.out" | tail -n 30
				prev=
			fi
			;;
		text)
			[ -n "$prev" ] || { bad "$label: output shown with no command block before it"; continue; }
			missing=0
			while IFS= read -r line; do
				line=$(sed 's/^[[:space:]]*//; s/[[:space:]]*$//' <<<"$line")
				[ -z "$line" ] && continue
				if ! sed 's/^[[:space:]]*//; s/[[:space:]]*$//' "$work/$prev.out" |
					grep -qxF -- "$line"; then
					bad "$label: '$line' is not in the output of the block before it"
					missing=1
				fi
			done <"$b"
			[ $missing = 1 ] && sed 's/^/    > /' "$work/$prev.out" | tail -n 30
			[ $missing = 0 ] && ok "$label: the output shown is the output"
			;;
		*) bad "$label is marked '$info': mark it sh (commands) or text (output)" ;;
		esac
	done
	[ $n -ge 1 ] || bad "$pname: no command block in its EXAMPLES"
done
summary
