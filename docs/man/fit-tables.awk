# fit-tables.awk - narrow the last column of every table pandoc writes into
# a manual page (a tbl(1) format line "lw(Xn) lw(Yn) ... .") so that the
# table fits an 80-column terminal: pandoc sizes every table to 70n, which
# with tbl's gaps of 3n is wider than the 71n that man(1) leaves there.
BEGIN { max = 71 }
/^(lw\([0-9.]+n\) ?)+\.$/ {
	n = split($0, f, /[()]/)
	k = 0
	total = -3
	for (i = 2; i <= n; i += 2) {
		w[++k] = f[i] + 0
		total += w[k] + 3
	}
	if (total > max)
		w[k] -= total - max
	line = ""
	for (i = 1; i <= k; i++)
		line = line sprintf("lw(%.1fn)%s", w[i], i < k ? " " : ".")
	print line
	next
}
{ print }
