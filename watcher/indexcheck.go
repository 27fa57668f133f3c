package watcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tavernhq/tavern/docstore"
)

// IndexFindings reports the sections of the index cache (.index/) that
// were saved with entries of files already gone (for `tavern doctor`):
// what a writer that saved a projection it had not synced leaves. An
// index that is merely behind the files is not reported: any write that
// does not go through a projection (a take, a hand edit, a crash) leaves
// entries of files that moved after the save, and the watcher re-checks
// every entry against its file when it loads the cache, so such entries
// are expected and harmless. "After the save" is told by the nearest
// existing directory above the missing file: a removal or rename changes
// its modification time. Repair removes the section, which the next
// projection rebuilds from the documents. Missing or corrupt sections
// are rebuilt anyway and not reported.
func IndexFindings(root string) ([]docstore.Finding, error) {
	var out []docstore.Finding
	for _, kind := range allSections() {
		cd, err := loadSection(root, kind)
		if err != nil {
			continue
		}
		saved, err := os.Stat(filepath.Join(root, CacheFile, sectionFile(kind)))
		if err != nil {
			continue
		}
		var missing []string
		for _, r := range cd.Records {
			abs := filepath.Join(root, filepath.FromSlash(r.Entry.Path))
			if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) && goneBefore(root, abs, saved.ModTime()) {
				missing = append(missing, r.Entry.Path)
			}
		}
		if len(missing) == 0 {
			continue
		}
		file := filepath.Join(root, CacheFile, sectionFile(kind))
		detail := fmt.Sprintf("entries of missing files: %d (first: %s)", len(missing), missing[0])
		out = append(out, docstore.Finding{Kind: docstore.FindingStaleIndex, Path: CacheFile + "/" + sectionFile(kind), Detail: detail,
			Repair: func() error {
				err := os.Remove(file)
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}})
	}
	return out, nil
}

// goneBefore reports whether missing file abs went before time t: the
// nearest directory above it that exists (inside root) was last changed
// before t.
func goneBefore(root, abs string, t time.Time) bool {
	for dir := filepath.Dir(abs); len(dir) >= len(root); dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return err == nil && st.ModTime().Before(t)
	}
	return false
}
