package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestUnifiedDiffHunks(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	b := "1\nTWO\n3\n4\n5\n6\n7\n8\nNINE\n10\n11\n"
	got := unifiedDiff("f.md", []byte(a), []byte(b))
	want := `--- a/f.md
+++ b/f.md
@@ -1,4 +1,4 @@
 1
-2
+TWO
 3
 4
@@ -7,4 +7,5 @@
 7
 8
-9
+NINE
 10
+11
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := unifiedDiff("f.md", []byte(a), []byte(a)); got != "--- a/f.md\n+++ b/f.md\n" {
		t.Errorf("no change: got %q", got)
	}
}

// A migration adds a line or two to a long frontmatter: the diff must not
// build a table of every pair of lines (20,000 lines took 3 GB and a
// 3 MB document, under MaxDocSize, got migrate killed for memory).
func TestUnifiedDiffLongDocumentSmallChange(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("---\nkind: knowledge\n")
	b.WriteString("---\nkind: knowledge\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&a, "f%d: %d\n", i, i)
		fmt.Fprintf(&b, "f%d: %d\n", i, i)
	}
	b.WriteString("schema_version: 1\n")
	a.WriteString("---\nbody\n")
	b.WriteString("---\nbody\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := unifiedDiff("k.md", []byte(a.String()), []byte(b.String()))
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("diff of a 20,000-line document with one added line allocated %d MB", alloc>>20)
	}
	want := "--- a/k.md\n+++ b/k.md\n@@ -20001,4 +20001,5 @@\n f19998: 19998\n f19999: 19999\n+schema_version: 1\n ---\n body\n"
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
}

// spreadMigration is a document of n frontmatter lines between a field a
// migration renames (at the top) and the schema_version it adds (at the
// end), before and after.
func spreadMigration(n int) (before, after []byte) {
	var a, b strings.Builder
	a.WriteString("---\nstatus: working\nname: old\n")
	b.WriteString("---\nstate: working\nname: old\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&a, "# note %d\n", i)
		fmt.Fprintf(&b, "# note %d\n", i)
	}
	b.WriteString("schema_version: 1\n")
	a.WriteString("---\nbody\n")
	b.WriteString("---\nbody\n")
	return []byte(a.String()), []byte(b.String())
}

// Two changed lines far apart leave a long middle between the lines both
// texts share at the start and the end: the diff of it must cost its
// length, not its square (a table of every pair of its lines took 3.5 s
// and 860 MB for 10,000 lines; `tavern migrate` of a document with
// 200,000 could not finish). Allocation, unlike time, does not depend on
// the machine: 4 times the lines may take about 4 times the bytes.
func TestUnifiedDiffSpreadChangeIsLinear(t *testing.T) {
	alloc := func(n int) uint64 {
		a, b := spreadMigration(n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := unifiedDiff("k.md", a, b)
		runtime.ReadMemStats(&after)
		want := fmt.Sprintf("--- a/k.md\n+++ b/k.md\n@@ -1,4 +1,4 @@\n ---\n-status: working\n+state: working\n name: old\n # note 0\n"+
			"@@ -%d,4 +%d,5 @@\n # note %d\n # note %d\n+schema_version: 1\n ---\n body\n", n+2, n+2, n-2, n-1)
		if got != want {
			t.Fatalf("diff of %d lines:\n%s\nwant:\n%s", n, got, want)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, big := alloc(5000), alloc(20000)
	if big > 6*small {
		t.Errorf("diff of 5,000 lines allocated %d KB, of 20,000 lines %d KB: more than linear", small>>10, big>>10)
	}
}

// The search's steps, counted: linear in the length of the texts for a
// migration's changes, and bounded for texts with nothing in common (the
// script then deletes and adds the middle whole).
func TestEditScriptWorkIsLinear(t *testing.T) {
	work := func(a, b []byte) int {
		x, y := diffLines(string(a)), diffLines(string(b))
		ops, w := editScript(x, y)
		checkScript(t, x, y, ops)
		return w
	}
	small, big := work(spreadMigration(10000)), work(spreadMigration(40000))
	if big > 5*small {
		t.Errorf("spread change: %d steps for 10,000 lines, %d for 40,000: more than linear", small, big)
	}
	// Nothing in common: every line of each text is unique.
	for _, n := range []int{1000, 20000} {
		var a, b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&a, "a%d\n", i)
			fmt.Fprintf(&b, "b%d\n", i)
		}
		if w, limit := work([]byte(a.String()), []byte(b.String())), (diffWorkPerLine+1)*2*n+diffWorkBase+4*diffMaxEdits; w > limit {
			t.Errorf("%d unrelated lines: %d steps, limit %d", n, w, limit)
		}
	}
}

// checkScript checks that ops turns x into y.
func checkScript(t *testing.T, x, y []string, ops []diffOp) {
	t.Helper()
	var gotX, gotY []string
	for _, o := range ops {
		if o.op != '+' {
			gotX = append(gotX, o.text)
		}
		if o.op != '-' {
			gotY = append(gotY, o.text)
		}
	}
	if !slices.Equal(gotX, x) || !slices.Equal(gotY, y) {
		t.Fatalf("the script does not turn %q into %q: %q", x, y, ops)
	}
}

// Random texts over a few distinct lines: the script turns one into the
// other and is a shortest one (as many edits as a longest common
// subsequence leaves).
func TestEditScriptShortest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() []string {
		s := make([]string, r.IntN(30))
		for i := range s {
			s[i] = string(rune('a'+r.IntN(4))) + "\n"
		}
		return s
	}
	for i := 0; i < 2000; i++ {
		x, y := text(), text()
		ops, _ := editScript(x, y)
		checkScript(t, x, y, ops)
		edits := 0
		for _, o := range ops {
			if o.op != ' ' {
				edits++
			}
		}
		if want := len(x) + len(y) - 2*lcsLen(x, y); edits != want {
			t.Fatalf("%q -> %q: %d edits, want %d: %q", x, y, edits, want, ops)
		}
	}
}

// lcsLen is the length of a longest common subsequence (the table, for
// small texts).
func lcsLen(x, y []string) int {
	t := make([][]int, len(x)+1)
	for i := range t {
		t[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}
