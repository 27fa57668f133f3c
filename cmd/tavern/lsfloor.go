//go:build tavern_ls_floor

package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
)

// Built only by `make bench` (BenchmarkOneShotBaseline/ls-floor-2k): once
// initialised, like tavern-init, the process does the input and output
// that `ls items ... --json` cannot do without and exits, in the project
// of its working directory. With no daemon to ask, an answer that notices
// every edit lists each directory of the kind and lstats each file in it
// (as `git status` lstats each file of its index), reads the kind's index
// (the alternative, reading every file, is more), and writes its answer,
// $TAVERN_FLOOR_BYTES bytes. The lstats run on GOMAXPROCS threads while the
// index is read, as ls does them; nothing is parsed, matched or encoded.
func init() {
	root := ".tavern"
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = os.ReadFile(filepath.Join(root, watcher.CacheFile, schema.Item.Name))
	}()
	// The directories of the kind's pattern: each {capture} is any name.
	segs := strings.Split(schema.Item.Pattern, "/")
	for i := range segs[:len(segs)-1] {
		if strings.HasPrefix(segs[i], "{") {
			segs[i] = "*"
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(root, filepath.Join(segs[:len(segs)-1]...)))
	type dir struct {
		fd    int
		names []string
	}
	var listed []dir
	for _, d := range dirs {
		f, err := os.Open(d)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(-1)
		listed = append(listed, dir{int(f.Fd()), names})
		defer f.Close()
	}
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st unix.Stat_t
			for _, d := range listed {
				for i := w; i < len(d.names); i += workers {
					_ = unix.Fstatat(d.fd, d.names[i], &st, unix.AT_SYMLINK_NOFOLLOW)
				}
			}
		}()
	}
	wg.Wait()
	n, _ := strconv.Atoi(os.Getenv("TAVERN_FLOOR_BYTES"))
	out := make([]byte, n)
	for i := range out {
		out[i] = ' '
	}
	growPipe(os.Stdout, len(out))
	_, _ = os.Stdout.Write(out)
	os.Exit(0)
}
