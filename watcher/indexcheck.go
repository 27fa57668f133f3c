package watcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tavernhq/tavern/docstore"
)

// IndexFindings reports the sections of the index cache (.index/) that
// hold entries of files that no longer exist (for `tavern doctor`). The
// watcher re-checks every entry against its file when it loads the
// cache, so such entries are harmless but stale; Repair removes the
// section, which the next projection rebuilds from the documents.
// Missing, corrupt or stale sections are rebuilt anyway and not reported.
func IndexFindings(root string) ([]docstore.Finding, error) {
	var out []docstore.Finding
	for _, kind := range allSections() {
		cd, err := loadSection(root, kind)
		if err != nil {
			continue
		}
		var missing []string
		for _, r := range cd.Records {
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(r.Entry.Path))); errors.Is(err, fs.ErrNotExist) {
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
