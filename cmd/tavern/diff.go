package main

import (
	"fmt"
	"slices"
	"strings"
)

// unifiedDiff renders a unified diff of two texts (hunks with 2 lines of
// context), to review migrations or apply them with `patch`. Its cost is
// linear in the length of the texts (see editScript).
func unifiedDiff(path string, a, b []byte) string {
	ops, _ := editScript(diffLines(string(a)), diffLines(string(b)))
	// Group the edit script into hunks with 2 lines of context, as
	// `diff -U2` does, so that `patch` can apply the output.
	const ctx = 2
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n", path, path)
	// Line numbers in a and in b (1-based) of ops[pos], kept as the
	// hunks go forward: counting from the top for each hunk made a
	// diff with many hunks quadratic.
	pos, aLine, bLine := 0, 1, 1
	for k := 0; k < len(ops); {
		if ops[k].op == ' ' {
			k++
			continue
		}
		start := max(k-ctx, 0)
		end := k
		for end < len(ops) {
			if ops[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].op == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		for ; pos < start; pos++ {
			aLine, bLine = advance(ops[pos].op, aLine, bLine)
		}
		aCount, bCount := 0, 0
		for _, o := range ops[start:end] {
			aCount, bCount = advance(o.op, aCount, bCount)
		}
		fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", aLine, aCount, bLine, bCount)
		for _, l := range ops[start:end] {
			t := l.text
			if !strings.HasSuffix(t, "\n") {
				t += "\n"
			}
			sb.WriteByte(l.op)
			sb.WriteString(t)
		}
		k = end
	}
	return sb.String()
}

// advance counts one line of an edit script in a and in b.
func advance(op byte, a, b int) (int, int) {
	if op != '+' {
		a++
	}
	if op != '-' {
		b++
	}
	return a, b
}

// diffOp is one line of an edit script: ' ' in both texts, '-' only in
// the old one, '+' only in the new one.
type diffOp struct {
	op   byte
	text string
}

// Bounds of the search for a shortest edit script. Past either, the part
// that differs is shown deleted and added whole: still a diff `patch`
// applies, only longer than it could be. A migration changes a few lines
// and stays far below both.
const (
	// diffMaxEdits bounds the edit distance searched: the trace kept to
	// read the script back holds about its square in numbers (4 MB).
	diffMaxEdits = 1000
	// diffWorkPerLine and diffWorkBase bound the steps of the search:
	// linear in the length of the texts, whatever their content.
	diffWorkPerLine = 64
	diffWorkBase    = 1 << 20
)

// editScript returns an edit script turning x into y, and the number of
// steps its search took (never more than the bounds above: the tests
// check that it grows with the length of the texts, not its square).
// Lines both share at the start and at the end are kept as they are; the
// middle is Myers' greedy search ("An O(ND) Difference Algorithm"),
// which costs the length times the number of edits, not the product of
// the lengths the table of a longest common subsequence did: that took
// minutes and gigabytes once a migration changed two lines far apart.
func editScript(x, y []string) (ops []diffOp, work int) {
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	ops = make([]diffOp, 0, len(x)+len(y)-pre-suf)
	for _, l := range x[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	mid, work := myers(x[pre:len(x)-suf], y[pre:len(y)-suf])
	ops = append(ops, mid...)
	for _, l := range x[len(x)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops, pre + suf + work
}

// myers returns a shortest edit script turning a into b, or, past the
// bounds above, one that deletes all of a and adds all of b.
func myers(a, b []string) ([]diffOp, int) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(a, b), n + m
	}
	maxD := min(n+m, diffMaxEdits)
	budget := diffWorkPerLine*(n+m) + diffWorkBase
	// v[off+k] is how far (in a) the furthest path with d edits reaches
	// on diagonal k = x-y; -1: none does. trace[d] keeps v[-d..d] after
	// step d, to read the script back from the end.
	off := maxD + 1
	v := make([]int32, 2*off+1)
	var trace [][]int32
	work := 0
	for d := 0; d <= maxD; d++ {
		get := func(k int) int { return int(v[off+k]) }
		for k := -d; k <= d; k += 2 {
			x := 0
			if d > 0 {
				var ok bool
				if x, _, ok = step(get, n, m, d, k); !ok {
					v[off+k] = -1
					work++
					continue
				}
			}
			x0, y := x, x-k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			work += 1 + x - x0 // one for the diagonal, one per line of its snake
			v[off+k] = int32(x)
			if x == n && y == m {
				trace = append(trace, slices.Clone(v[off-d:off+d+1]))
				return backtrack(a, b, trace), work
			}
		}
		trace = append(trace, slices.Clone(v[off-d:off+d+1]))
		if work > budget {
			break
		}
	}
	return replaceAll(a, b), work
}

// step returns where the furthest path with d edits starts on diagonal k,
// from the paths with d-1 (get): one line down (an addition from
// diagonal k+1) or right (a deletion from k-1), whichever reaches
// further; a deletion wins a tie, so a changed line reads - then +.
// from is the diagonal it comes from; ok is false if neither move stays
// inside the texts.
func step(get func(k int) int, n, m, d, k int) (x, from int, ok bool) {
	down, right := -1, -1
	if k < d {
		if px := get(k + 1); px >= 0 && px-(k+1) < m {
			down = px
		}
	}
	if k > -d {
		if px := get(k - 1); px >= 0 && px < n {
			right = px + 1
		}
	}
	if right > down {
		return right, k - 1, true
	}
	return down, k + 1, down >= 0
}

// backtrack reads the edit script back from the end through trace.
func backtrack(a, b []string, trace [][]int32) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1]
		get := func(k int) int { return int(prev[k+d-1]) }
		k := x - y
		sx, from, _ := step(get, len(a), len(b), d, k)
		// The edit ends at (sx, sx-k); the snake after it is equal lines.
		for x > sx {
			x--
			y--
			rev = append(rev, diffOp{' ', a[x]})
		}
		if from == k+1 {
			y--
			rev = append(rev, diffOp{'+', b[y]})
		} else {
			x--
			rev = append(rev, diffOp{'-', a[x]})
		}
	}
	for x > 0 {
		x--
		y--
		rev = append(rev, diffOp{' ', a[x]})
	}
	slices.Reverse(rev)
	return rev
}

// replaceAll is the edit script that deletes all of a and adds all of b.
func replaceAll(a, b []string) []diffOp {
	ops := make([]diffOp, 0, len(a)+len(b))
	for _, l := range a {
		ops = append(ops, diffOp{'-', l})
	}
	for _, l := range b {
		ops = append(ops, diffOp{'+', l})
	}
	return ops
}

// diffLines splits after each newline, without the empty string
// strings.SplitAfter leaves after a final newline.
func diffLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
