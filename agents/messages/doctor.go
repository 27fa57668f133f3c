package messages

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
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
		if len(files) > 0 {
			n := strconv.Itoa(len(files)) + " files"
			if len(files) == 1 {
				n = "1 file"
			}
			detail = "no channel document channels/" + name + ".md; " + n + " (--fix creates the document)"
		}
		repair := func() error { return repairStray(s, name, rel, dir) }
		out = append(out, docstore.Finding{Kind: docstore.FindingStrayDir, Path: messagesDir(name), Detail: detail, Repair: repair})
	}
	return out, nil
}

// repairStray removes the empty messages directory dir of channel name,
// or gives the messages in it their channel document rel: as the
// directory is now, under the channel's lock. What doctor saw may have
// been an rm of the channel half way (it holds that lock until the
// messages are in the trash too): made again, the rm would be undone.
func repairStray(s *docstore.Store, name, rel, dir string) error {
	l, err := s.Lock(schema.ChannelLockKey(name))
	if err != nil {
		return err
	}
	defer l.Unlock()
	if exists(s, rel) {
		return nil
	}
	files, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(files) == 0 {
		err := os.Remove(dir) // fails if a message arrived since: then it stays
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	// Its messages are there: a name near another's is not a typo to
	// refuse.
	_, err = CreateChannelWith(s, name, "", CreateOptions{New: true})
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}
