package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tavern migrate of a long document through the built binary: a 200,000
// line body, and 20,000 frontmatter lines between the field the migration
// renames and the schema_version it adds. migrate wrote the document,
// then did not finish: the diff built a table of every pair of the lines
// between the two changes (3.2 GB here; 80 GB with 100,000 of them). The
// check is the process's peak memory, which does not depend on the
// machine's speed (a second or two and 150 MB since); the deadline only
// keeps a regression from hanging the test run.
func TestMigrateLongDocument(t *testing.T) {
	p := newProject(t)
	const between, body = 20000, 200000
	var lines strings.Builder
	for i := 0; i < between; i++ {
		fmt.Fprintf(&lines, "# note %d\n", i)
	}
	lines.WriteString("---\n")
	for i := 0; i < body; i++ {
		fmt.Fprintf(&lines, "line %d of the body\n", i)
	}
	before := "---\nstatus: working\nname: old\nrole: reviewer\n" + lines.String()
	after := "---\nstate: working\nname: old\nrole: reviewer\n" + strings.Replace(lines.String(), "\n---\n", "\nschema_version: 1\n---\n", 1)
	p.write("agents/old.md", before)

	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := p.cmd(ctx, tavernBin(t), args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if ctx.Err() != nil {
			t.Fatalf("tavern %s did not finish in 2 minutes", strings.Join(args, " "))
		}
		if err != nil {
			t.Fatalf("tavern %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		// A child's peak counts the parent's from before the exec (the
		// kernel keeps it across fork and exec): only what lies above
		// this process's peak is the child's own.
		var self syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
			t.Fatal(err)
		}
		if rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss; rss > self.Maxrss+512<<10 { // KB
			t.Errorf("tavern %s peaked at %d MB", strings.Join(args, " "), rss>>10)
		}
		return string(out)
	}
	want := fmt.Sprintf("--- a/agents/old.md\n+++ b/agents/old.md\n"+
		"@@ -1,4 +1,4 @@\n ---\n-status: working\n+state: working\n name: old\n role: reviewer\n"+
		"@@ -%d,4 +%d,5 @@\n # note %d\n # note %d\n+schema_version: 1\n ---\n line 0 of the body\n",
		between+3, between+3, between-2, between-1)
	if got := run("migrate", "--dry-run"); got != want {
		t.Errorf("migrate --dry-run:\n%.2000s\nwant:\n%s", got, want)
	}
	if p.read("agents/old.md") != before {
		t.Fatal("migrate --dry-run changed the document")
	}
	if got := run("migrate"); got != "migrated agents/old.md\n" {
		t.Errorf("migrate: %q", got)
	}
	if p.read("agents/old.md") != after {
		t.Error("the migrated document is not the old one with the two lines changed")
	}
	if got := run("migrate"); got != "all documents are at the current schema version\n" {
		t.Errorf("second migrate: %q", got)
	}
}
