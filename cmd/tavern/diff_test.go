package main

import (
	"fmt"
	"runtime"
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
