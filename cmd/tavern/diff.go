package main

import (
	"fmt"
	"strings"
)

// unifiedDiff renders a unified diff of two small texts (hunks with 2
// lines of context), to review migrations or apply them with `patch`.
func unifiedDiff(path string, a, b []byte) string {
	x := diffLines(string(a))
	y := diffLines(string(b))
	// The lines both share at the start and at the end are equal in
	// the edit script: the table below (n*m cells) is built only for
	// what lies between, a few lines for a migration of a long document.
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	head, tail := x[:pre], x[len(x)-suf:]
	x, y = x[pre:len(x)-suf], y[pre:len(y)-suf]
	// Longest common subsequence table of the middle.
	n, m := len(x), len(y)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	ops := make([]line, 0, len(head)+n+m+len(tail))
	for _, l := range head {
		ops = append(ops, line{' ', l})
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, line{' ', x[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, line{'+', y[j]})
			j++
		default:
			ops = append(ops, line{'-', x[i]})
			i++
		}
	}
	for _, l := range tail {
		ops = append(ops, line{' ', l})
	}
	// Group the edit script into hunks with 2 lines of context, as
	// `diff -U2` does, so that `patch` can apply the output.
	const ctx = 2
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n", path, path)
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
		// Line numbers of the hunk's first line in a and in b (1-based).
		aLine, bLine := 1, 1
		for _, o := range ops[:start] {
			if o.op != '+' {
				aLine++
			}
			if o.op != '-' {
				bLine++
			}
		}
		aCount, bCount := 0, 0
		for _, o := range ops[start:end] {
			if o.op != '+' {
				aCount++
			}
			if o.op != '-' {
				bCount++
			}
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

// diffLines splits after each newline, without the empty string
// strings.SplitAfter leaves after a final newline.
func diffLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
