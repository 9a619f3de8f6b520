// Package textdiff renders the difference of two texts as a unified diff,
// the format of `diff -u` and `git diff`, for test failures that compare
// whole files (golden files).
package textdiff

import (
	"fmt"
	"strings"
)

// context is the number of unchanged lines shown around a change.
const context = 3

// maxEdits bounds the search for the shortest edit script, whose memory
// grows with the square of the number of edits; beyond it the differing
// middle is shown as removed then added, still a correct diff.
const maxEdits = 2000

// Unified returns the unified diff that turns a (named aName) into b
// (named bName), or "" when they are equal.
func Unified(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	ops := edits(lines(a), lines(b))
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", aName, bName)
	for _, h := range hunks(ops) {
		writeHunk(&sb, ops[h[0]:h[1]])
	}
	return sb.String()
}

// lines splits s after each newline; the last line may lack one.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// op is one line of the edit script: kept (' '), removed ('-') or added
// ('+'); a and b are the numbers of lines of a and b before it.
type op struct {
	kind byte
	line string
	a, b int
}

// edits is a shortest edit script from a to b (Myers' algorithm), with
// the common prefix and suffix taken off first: they are most of a golden
// file.
func edits(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []op
	for i := range pre {
		out = append(out, op{' ', a[i], i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(ma, mb)
	if !ok {
		mid = nil
		for _, l := range ma {
			mid = append(mid, op{kind: '-', line: l})
		}
		for _, l := range mb {
			mid = append(mid, op{kind: '+', line: l})
		}
	}
	ai, bi := pre, pre
	for _, o := range mid {
		o.a, o.b = ai, bi
		if o.kind != '+' {
			ai++
		}
		if o.kind != '-' {
			bi++
		}
		out = append(out, o)
	}
	for i := range suf {
		out = append(out, op{' ', a[len(a)-suf+i], len(a) - suf + i, len(b) - suf + i})
	}
	return out
}

// myers returns the shortest edit script from a to b (line numbers unset),
// or false when it needs more than maxEdits edits.
func myers(a, b []string) ([]op, bool) {
	n, m := len(a), len(b)
	// vs[d][k+d] is the furthest x reached on diagonal k = x-y with d
	// edits (only every other k is reachable).
	var vs [][]int
	// down says whether the d-th edit reaching diagonal k is an addition
	// (coming from diagonal k+1) rather than a removal (from k-1).
	down := func(d, k int) bool {
		prev := vs[d-1]
		return k == -d || k != d && prev[k-1+d-1] < prev[k+1+d-1]
	}
	for d := 0; d <= n+m; d++ {
		if d > maxEdits {
			return nil, false
		}
		v := make([]int, 2*d+1)
		vs = append(vs, v)
		for k := -d; k <= d; k += 2 {
			x := 0
			if d > 0 {
				if down(d, k) {
					x = vs[d-1][k+1+d-1]
				} else {
					x = vs[d-1][k-1+d-1] + 1
				}
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[k+d] = x
			if x >= n && y >= m {
				return backtrack(a, b, vs, down, d), true
			}
		}
	}
	return nil, false // not reached: d = n+m always ends
}

// backtrack walks the furthest points back from the end to the start.
func backtrack(a, b []string, vs [][]int, down func(d, k int) bool, d int) []op {
	var rev []op
	x, y := len(a), len(b)
	for ; d > 0; d-- {
		k := x - y
		pk := k - 1
		if down(d, k) {
			pk = k + 1
		}
		px := vs[d-1][pk+d-1]
		py := px - pk
		// The edit leads from (px, py) to (sx, sy), then a snake of equal
		// lines to (x, y).
		sx, sy := px+1, py
		if pk == k+1 {
			sx, sy = px, py+1
		}
		for x > sx && y > sy {
			x, y = x-1, y-1
			rev = append(rev, op{kind: ' ', line: a[x]})
		}
		if pk == k+1 {
			rev = append(rev, op{kind: '+', line: b[py]})
		} else {
			rev = append(rev, op{kind: '-', line: a[px]})
		}
		x, y = px, py
	}
	for x > 0 {
		x--
		rev = append(rev, op{kind: ' ', line: a[x]})
	}
	out := make([]op, len(rev))
	for i, o := range rev {
		out[len(rev)-1-i] = o
	}
	return out
}

// hunks returns the [start, end) ranges of ops shown: each change with
// context lines around it, changes closer than twice the context merged.
func hunks(ops []op) [][2]int {
	var out [][2]int
	for i, o := range ops {
		if o.kind == ' ' {
			continue
		}
		start, end := max(i-context, 0), min(i+1+context, len(ops))
		if n := len(out); n > 0 && start <= out[n-1][1] {
			out[n-1][1] = end
			continue
		}
		out = append(out, [2]int{start, end})
	}
	return out
}

// writeHunk writes one hunk: its header (1-based start lines; a range of
// no lines starts at the line before it) and its lines.
func writeHunk(sb *strings.Builder, ops []op) {
	na, nb := 0, 0
	for _, o := range ops {
		if o.kind != '+' {
			na++
		}
		if o.kind != '-' {
			nb++
		}
	}
	start := func(line, count int) int {
		if count == 0 {
			return line
		}
		return line + 1
	}
	fmt.Fprintf(sb, "@@ -%d,%d +%d,%d @@\n", start(ops[0].a, na), na, start(ops[0].b, nb), nb)
	for _, o := range ops {
		sb.WriteByte(o.kind)
		sb.WriteString(o.line)
		if !strings.HasSuffix(o.line, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}
