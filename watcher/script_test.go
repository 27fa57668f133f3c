package watcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A script is a list of file operations, one per line, followed by a line
// "Output:" and the expected logical changes, one per line ("create a.md").
// After each operation the runner waits (Sync) until the watcher has seen
// everything, so the output is exact, not timing-dependent. Operations
// listed before a "start" line run before the watcher starts (its initial
// scan reports them). Every script runs against fsnotify and polling.
//
// Operations:
//
//	write P [TEXT]        create or truncate-and-write P (TEXT may be "quoted\n")
//	append P TEXT         append to P in place
//	double-write P TEXT   write P twice (VS Code style)
//	rename-save P TEXT    vim style: probe 4913, swap file, P -> P~, write P, rm P~
//	atomic-save P TEXT    write .tmp/x then rename over P (engine style)
//	touch P               change mtime only
//	mv A B | rm P | mkdir -p P | symlink TARGET P | mkfifo P
//	drop on|off           discard fsnotify events (simulated loss); no Sync between
//	overflow              inject an event queue overflow
//	rescan                force a full reconcile
//	open P TEXT           create or truncate P, write TEXT and keep it open
//	close P TEXT          write TEXT to the open P and close it
//	peek                  let the watcher look (a Sync that does not decide
//	                      paths in the middle of a change, as an event would)
//	expire                the settle time of every path in the middle of a
//	                      change is up
//	~ OP ...              run OP without the Sync after it
//	only MODE             run the script in MODE only (fsnotify or poll)
type script struct {
	name   string
	setup  [][]string
	ops    [][]string
	output []string
	only   string
}

func parseScript(tb testing.TB, path string) script {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	s := script{name: filepath.Base(path)}
	var ops [][]string
	inOutput := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		switch {
		case inOutput:
			s.output = append(s.output, strings.Join(strings.Fields(line), " "))
		case line == "Output:":
			inOutput = true
		case line == "start":
			s.setup, ops = ops, nil
		case strings.HasPrefix(line, "only "):
			s.only = strings.TrimPrefix(line, "only ")
		default:
			args, err := splitArgs(line)
			if err != nil {
				tb.Fatalf("%s:%d: %v", path, n, err)
			}
			ops = append(ops, args)
		}
	}
	if !inOutput {
		tb.Fatalf("%s: no Output: section", path)
	}
	s.ops = ops
	return s
}

// splitArgs splits on spaces; a trailing argument may be a Go quoted string.
func splitArgs(line string) ([]string, error) {
	var args []string
	for line != "" {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			break
		}
		if line[0] == '"' {
			s, err := strconv.Unquote(line)
			if err != nil {
				return nil, fmt.Errorf("bad quoted text %s: %w", line, err)
			}
			return append(args, s), nil
		}
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return append(args, line), nil
		}
		args = append(args, line[:i])
		line = line[i:]
	}
	return args, nil
}

type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) onChange(cs []Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		r.got = append(r.got, describe(c))
	}
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func describe(c Change) string {
	if c.Op != OpError {
		return c.Op.String() + " " + c.Path
	}
	cat := "other"
	switch {
	case errors.Is(c.Err, ErrSymlink):
		cat = "symlink"
	case errors.Is(c.Err, ErrNotRegular):
		cat = "not-regular"
	case errors.Is(c.Err, fs.ErrPermission):
		cat = "permission"
	}
	p := c.Path
	if p == "" {
		p = "."
	}
	return "error " + p + " " + cat
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/script/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		s := parseScript(t, file)
		for _, mode := range []string{"fsnotify", "poll"} {
			if s.only != "" && s.only != mode {
				continue
			}
			t.Run(strings.TrimSuffix(s.name, ".txt")+"/"+mode, func(t *testing.T) {
				t.Parallel()
				runScript(t, s, mode)
			})
		}
	}
}

func runScript(t *testing.T, s script, mode string) {
	root := t.TempDir()
	for _, op := range s.setup {
		doOp(t, nil, root, op)
	}
	rec := &recorder{}
	// Debounce far beyond the test: only Sync makes the watcher look at
	// the disk, so the output is exact and proves that coalescing comes
	// from comparing states, not from timing.
	opt := FSOptions{OnChange: rec.onChange, Reconcile: -1, Poll: -1, Debounce: time.Hour}
	if mode == "poll" {
		// A poll interval far beyond the test: only Sync drives it, so
		// the outcome does not depend on timing.
		opt.Poll = time.Hour
	}
	w, err := WatchFS(root, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dropping := false
	for _, op := range s.ops {
		noSync := op[0] == "~"
		if noSync {
			op = op[1:]
		}
		doOp(t, w, root, op)
		if op[0] == "drop" {
			dropping = op[1] == "on"
		}
		if dropping || noSync || op[0] == "peek" {
			// Lost events: nothing may look at the disk until the
			// overflow, in either mode.
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := w.Sync(ctx); err != nil {
			t.Fatalf("after %q: Sync: %v", op, err)
		}
		cancel()
	}
	// A last Sync: what is still settling is decided now.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := w.Sync(ctx); err != nil {
		t.Fatalf("final Sync: %v", err)
	}
	cancel()
	closeWriters(t, root)
	got := rec.lines()
	if strings.Join(got, "\n") != strings.Join(s.output, "\n") {
		t.Errorf("changes:\ngot:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(s.output, "\n\t"))
	}
	// Whatever happened, the watcher's state equals a fresh scan.
	assertStateMatchesDisk(t, w)
}

func doOp(t *testing.T, w *FSWatcher, root string, op []string) {
	t.Helper()
	p := func(i int) string {
		if i >= len(op) {
			t.Fatalf("%v: missing argument %d", op, i)
		}
		return filepath.Join(root, filepath.FromSlash(op[i]))
	}
	text := func() []byte {
		if len(op) > 2 {
			return []byte(op[2])
		}
		return nil
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
	}
	switch op[0] {
	case "write":
		must(os.WriteFile(p(1), text(), 0o644))
	case "append":
		f, err := os.OpenFile(p(1), os.O_WRONLY|os.O_APPEND, 0)
		must(err)
		_, err = f.Write(text())
		must(err)
		must(f.Close())
	case "double-write":
		must(os.WriteFile(p(1), text(), 0o644))
		must(os.WriteFile(p(1), text(), 0o644))
	case "rename-save":
		dir, base := filepath.Split(p(1))
		probe := filepath.Join(dir, "4913")
		must(os.WriteFile(probe, nil, 0o644))
		must(os.Remove(probe))
		swap := filepath.Join(dir, "."+base+".swp")
		must(os.WriteFile(swap, []byte("swap"), 0o644))
		must(os.Rename(p(1), p(1)+"~"))
		must(os.WriteFile(p(1), text(), 0o644))
		must(os.Remove(p(1) + "~"))
		must(os.Remove(swap))
	case "atomic-save":
		tmp := filepath.Join(root, ".tmp")
		must(os.MkdirAll(tmp, 0o755))
		f, err := os.CreateTemp(tmp, "w")
		must(err)
		_, err = f.Write(text())
		must(err)
		must(f.Close())
		must(os.Rename(f.Name(), p(1)))
	case "touch":
		later := time.Now().Add(time.Hour)
		must(os.Chtimes(p(1), later, later))
	case "mv":
		must(os.Rename(p(1), p(2)))
	case "rm":
		must(os.RemoveAll(p(1)))
	case "mkdir":
		if len(op) != 3 || op[1] != "-p" {
			t.Fatalf("%v: want mkdir -p PATH", op)
		}
		must(os.MkdirAll(p(2), 0o755))
	case "symlink":
		must(os.Symlink(op[1], p(2)))
	case "mkfifo":
		must(syscall.Mkfifo(p(1), 0o644))
	case "drop":
		if w != nil {
			w.dropEvents.Store(op[1] == "on")
		}
	case "overflow":
		if w != nil {
			w.watchError(ErrOverflow)
		}
	case "rescan":
		if w != nil {
			must(w.Rescan(context.Background()))
		}
	case "open":
		f, err := os.OpenFile(p(1), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		must(err)
		_, err = f.Write(text())
		must(err)
		openWriters.Store(p(1), f)
	case "close":
		v, ok := openWriters.LoadAndDelete(p(1))
		if !ok {
			t.Fatalf("%v: %s is not open", op, op[1])
		}
		f := v.(*os.File)
		_, err := f.Write(text())
		must(err)
		must(f.Close())
	case "peek":
		if w != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			must(w.sync(ctx, false))
		}
	case "expire":
		if w != nil {
			w.expireSettles()
		}
	default:
		t.Fatalf("unknown op %q", op[0])
	}
}

// openWriters holds the files of "open" ops, by absolute path.
var openWriters sync.Map

// closeWriters closes what a script left open under root.
func closeWriters(tb testing.TB, root string) {
	openWriters.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), root+string(filepath.Separator)) {
			v.(*os.File).Close()
			openWriters.Delete(k)
		}
		return true
	})
}

// assertStateMatchesDisk compares the watcher's state with a fresh scan of
// the same root.
func assertStateMatchesDisk(tb testing.TB, w *FSWatcher) {
	tb.Helper()
	got := w.State()
	fresh, err := WatchFS(w.Root(), FSOptions{Poll: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	want := fresh.State()
	fresh.Close()
	if len(got) != len(want) {
		tb.Errorf("state has %d files, fresh scan %d", len(got), len(want))
	}
	n := 0
	for p, ws := range want {
		gs, ok := got[p]
		switch {
		case !ok:
			tb.Errorf("missing from state: %s", p)
		case gs.Hash != ws.Hash || !gs.SameStat(ws):
			tb.Errorf("stale state for %s", p)
		default:
			continue
		}
		if n++; n > 10 {
			tb.Fatal("too many differences")
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			tb.Errorf("state has %s, disk does not", p)
			if n++; n > 10 {
				tb.Fatal("too many differences")
			}
		}
	}
}
