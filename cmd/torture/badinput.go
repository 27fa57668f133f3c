package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// badCorpus is hand-written broken input: files named like items in
// pending/ that must be reported and skipped, never fixed or removed.
var badCorpus = map[string]string{
	"broken-yaml":       "---\ntitle: [unclosed\n---\nbody\n",
	"wrong-types":       "---\nqueue: q\nattempts: lots\n---\n",
	"no-frontmatter":    "just text\n",
	"unclosed":          "---\ntitle: x\n",
	"empty":             "",
	"tab-indent":        "---\ntitle: x\n\tpriority: 1\n---\n",
	"duplicate-key":     "---\ntitle: a\ntitle: b\n---\n",
	"list-frontmatter":  "---\n- a\n- b\n---\n",
	"newer-version":     "---\nschema_version: 99\nqueue: q\n---\n",
	"not-utf8":          "---\ntitle: \xff\xfe\n---\n",
	"binary":            "---\ntitle: a\x00b\n---\n",
	"conflict-markers":  "---\n<<<<<<< HEAD\ntitle: a\n=======\ntitle: b\n>>>>>>> x\n---\n",
	"bare-cr":           "---\rtitle: x\r---\r",
	"self-alias":        "---\nqueue: q\na: &x [1, *x]\n---\n",
	"negative-priority": "---\nqueue: q\npriority: -3\n---\n",
}

// badInput puts the corpus in pending/ beside one good item, plus the
// testdata corpus of cmd/tavern when present, a FIFO, a directory, a
// symlink and an alias bomb; then queue ls, take and check must report
// every one (never block, never change them) and take the good item.
func badInput(e *env) row {
	dir := e.project("badinput")
	e.must(dir, "queue", "create", "q")
	good := strings.TrimSpace(e.must(dir, "queue", "add", "q", "--priority", "9"))
	pend := filepath.Join(dir, ".tavern/queues/q/pending")
	files := map[string]string{}
	for name, data := range badCorpus {
		files["p00-"+name+".md"] = data
	}
	if ents, err := os.ReadDir(filepath.Join(moduleRoot(), "cmd/tavern/testdata/badinput")); err == nil {
		for _, en := range ents {
			data, err := os.ReadFile(filepath.Join(moduleRoot(), "cmd/tavern/testdata/badinput", en.Name()))
			if err == nil {
				files["p00-td-"+en.Name()] = string(data)
			}
		}
	}
	var bomb strings.Builder
	bomb.WriteString("---\nqueue: q\na: &a [x,x,x,x,x,x,x,x,x]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb.WriteString(n + ": &" + n + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n")
		prev = n
	}
	files["p00-alias-bomb.md"] = bomb.String() + "---\n"
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(pend, name), []byte(data), 0o644); err != nil {
			fatal(err)
		}
	}
	syscall.Mkfifo(filepath.Join(pend, "p00-fifo.md"), 0o644)
	os.Mkdir(filepath.Join(pend, "p00-dir.md"), 0o755)
	os.Symlink(filepath.Join(dir, ".tavern/tavern.md"), filepath.Join(pend, "p00-symlink.md"))
	odd := []string{"p00-fifo.md", "p00-dir.md", "p00-symlink.md"}
	r := row{tried: len(files) + len(odd)}
	before := snapshot(dir)

	run := func(args ...string) result {
		done := make(chan result, 1)
		go func() { done <- e.tavern(dir, args...) }()
		select {
		case res := <-done:
			return res
		case <-time.After(time.Minute):
			r.lost++ // blocked: the queue is as good as lost
			return result{code: -1}
		}
	}
	ls := run("queue", "ls", "q")
	check := run("check")
	take := run("queue", "take", "q")
	if ls.code != 0 {
		r.lost++
		r.note += "queue ls failed: " + ls.err + "; "
	}
	if take.code != 0 || !strings.HasPrefix(take.out, good+" ") {
		r.lost++
		r.note += fmt.Sprintf("take did not take the good item (exit %d): %s; ", take.code, take.err)
	}
	unreported := 0
	for name := range files {
		if !strings.Contains(check.err, name) || !strings.Contains(take.err, name) || !strings.Contains(ls.err, name) {
			unreported++
		}
	}
	for _, name := range odd {
		if !strings.Contains(take.err, name) || !strings.Contains(ls.err, name) {
			unreported++
		}
	}
	if unreported > 0 {
		r.note += fmt.Sprintf("%d bad files not reported by ls, take and check; ", unreported)
		r.lost += unreported
	}
	// Nothing was changed but the good item's claim.
	after := snapshot(dir)
	if strings.Count(after, "/pending/p00-") != strings.Count(before, "/pending/p00-") {
		r.lost++
	}
	for name, data := range files {
		if got, err := os.ReadFile(filepath.Join(pend, name)); err != nil || string(got) != data {
			r.lost++
		}
	}
	for _, name := range odd {
		if _, err := os.Lstat(filepath.Join(pend, name)); err != nil {
			r.lost++
		}
	}
	r.left, _ = e.leftAfterDoctor(dir)
	r.note = strings.TrimSpace(r.note + fmt.Sprintf("%d broken files and %d odd files in pending/", len(files), len(odd)))
	return r
}
