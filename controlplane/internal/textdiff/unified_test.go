package textdiff

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nx\nc\n",
			"--- want\n+++ got\n@@ -1,3 +1,3 @@\n a\n-b\n+x\n c\n"},
		{"added to an empty file", "", "a\n",
			"--- want\n+++ got\n@@ -0,0 +1,1 @@\n+a\n"},
		{"removed at the end", "a\nb\n", "a\n",
			"--- want\n+++ got\n@@ -1,2 +1,1 @@\n a\n-b\n"},
		{"context of three lines", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nX\n6\n7\n8\n9\n",
			"--- want\n+++ got\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n"},
		{"changes far apart: two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\nY\n",
			"--- want\n+++ got\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+Y\n"},
		{"changes six lines apart: one hunk", "1\n2\n3\n4\n5\n6\n7\n8\n", "X\n2\n3\n4\n5\n6\n7\nY\n",
			"--- want\n+++ got\n@@ -1,8 +1,8 @@\n-1\n+X\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n"},
		{"no newline at the end", "a\n", "a",
			"--- want\n+++ got\n@@ -1,1 +1,1 @@\n-a\n+a\n\\ No newline at end of file\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unified("want", "got", tc.a, tc.b); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// Applying the diff to a gives b, and the diff is shortest: its changed
// lines are those outside a longest common subsequence.
func TestUnifiedRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		var sb strings.Builder
		for range r.IntN(30) {
			sb.WriteString(strconv.Itoa(r.IntN(5)) + "\n")
		}
		return sb.String()
	}
	for i := range 2000 {
		a, b := text(), text()
		d := Unified("a", "b", a, b)
		got, changed := apply(t, a, d)
		if got != b {
			t.Fatalf("case %d: applying\n%s\nto %q gives %q, want %q", i, d, a, got, b)
		}
		if want := len(lines(a)) + len(lines(b)) - 2*lcs(lines(a), lines(b)); changed != want {
			t.Fatalf("case %d: %d changed lines, want %d:\n%s", i, changed, want, d)
		}
	}
}

// Large files: changes spread out get a shortest diff; texts with more
// differences than the search allows get a correct one.
func TestUnifiedLarge(t *testing.T) {
	text := func(n int, line func(i int) string) string {
		var sb strings.Builder
		for i := range n {
			sb.WriteString(line(i) + "\n")
		}
		return sb.String()
	}
	a := text(20000, func(i int) string { return "line " + strconv.Itoa(i) })
	for _, tc := range []struct {
		name        string
		b           string
		wantChanged int
	}{
		{"a line in a thousand changed", text(20000, func(i int) string {
			if i%1000 == 0 {
				return "changed"
			}
			return "line " + strconv.Itoa(i)
		}), 40},
		{"every line changed", text(20000, func(i int) string { return "other " + strconv.Itoa(i) }), 40000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Unified("a", "b", a, tc.b)
			if got, changed := apply(t, a, d); got != tc.b || changed != tc.wantChanged {
				t.Fatalf("%d changed lines (want %d), result right: %v", changed, tc.wantChanged, got == tc.b)
			}
		})
	}
}

// apply applies a unified diff (as Unified writes them) and counts the
// changed lines.
func apply(t *testing.T, a, d string) (string, int) {
	t.Helper()
	if d == "" {
		return a, 0
	}
	src := lines(a)
	var out []string
	next, changed := 0, 0
	dl := lines(d)[2:]
	for i := 0; i < len(dl); i++ {
		l := dl[i]
		if strings.HasPrefix(l, "@@") {
			var as, ac, bs, bc int
			if _, err := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@\n", &as, &ac, &bs, &bc); err != nil {
				t.Fatalf("bad hunk header %q: %v", l, err)
			}
			if ac > 0 {
				as--
			}
			out = append(out, src[next:as]...)
			next = as
			continue
		}
		line := l[1:]
		if i+1 < len(dl) && dl[i+1] == "\\ No newline at end of file\n" {
			line = strings.TrimSuffix(line, "\n")
			i++
		}
		switch l[0] {
		case ' ':
			if src[next] != line {
				t.Fatalf("context %q does not match %q", line, src[next])
			}
			out = append(out, line)
			next++
		case '-':
			if src[next] != line {
				t.Fatalf("removed %q does not match %q", line, src[next])
			}
			next++
			changed++
		case '+':
			out = append(out, line)
			changed++
		}
	}
	out = append(out, src[next:]...)
	return strings.Join(out, ""), changed
}

func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	for i := range a {
		cur := make([]int, len(b)+1)
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}
