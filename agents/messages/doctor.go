package messages

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tavernhq/tavern/docstore"
)

// Findings reports message directories that have no channel document
// (`tavern doctor`'s stray-messages): made by hand, or by a wait of an
// older version on a channel that did not exist. Such a directory is no
// channel (ListChannels, CheckChannel). The repair removes an empty one
// and gives one that holds messages its channel document, so they are
// listed and read again; nothing is deleted that holds a message.
func Findings(s *docstore.Store) ([]docstore.Finding, error) {
	ents, err := os.ReadDir(filepath.Join(s.Root(), "messages"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []docstore.Finding
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || ValidChannel(name) != nil {
			continue
		}
		rel, err := channelPath(name)
		if err != nil || exists(s, rel) {
			continue
		}
		dir := filepath.Join(s.Root(), messagesDir(name))
		files, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		detail := "no channel document channels/" + name + ".md; empty (--fix removes it)"
		repair := func() error {
			err := os.Remove(dir) // fails if a message arrived since: then it stays
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if len(files) > 0 {
			detail = "no channel document channels/" + name + ".md; " + strconv.Itoa(len(files)) + " files (--fix creates the document)"
			repair = func() error {
				// Its messages are there: a name near another's is
				// not a typo to refuse.
				_, err := CreateChannelWith(s, name, "", CreateOptions{New: true})
				if errors.Is(err, fs.ErrExist) {
					return nil
				}
				return err
			}
		}
		out = append(out, docstore.Finding{Kind: docstore.FindingStrayDir, Path: messagesDir(name), Detail: detail, Repair: repair})
	}
	return out, nil
}
