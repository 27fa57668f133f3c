package main

import (
	"fmt"
	"strings"
)

// unifiedDiff renders a minimal unified diff of two small texts (whole
// file as one hunk with 2 lines of context), enough to review migrations.
func unifiedDiff(path string, a, b []byte) string {
	x := strings.SplitAfter(string(a), "\n")
	y := strings.SplitAfter(string(b), "\n")
	// Longest common subsequence table; documents are small.
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
	var ops []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, line{' ', x[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, line{'+', y[j]})
			j++
		default:
			ops = append(ops, line{'-', x[i]})
			i++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n", path, path)
	for k, l := range ops {
		near := false
		for d := -2; d <= 2; d++ {
			if k+d >= 0 && k+d < len(ops) && ops[k+d].op != ' ' {
				near = true
			}
		}
		if !near {
			continue
		}
		t := l.text
		if !strings.HasSuffix(t, "\n") {
			t += "\n"
		}
		sb.WriteByte(l.op)
		sb.WriteString(t)
	}
	return sb.String()
}
