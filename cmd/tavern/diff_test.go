package main

import "testing"

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
