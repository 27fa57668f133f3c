package gitsync

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
)

// SyncedAs reports whether this clone (the store at root) has synced or
// claimed as machine name: a round's saved state names it, or a commit
// of .sync/git is authored by it (a sync commit or, under coordination:
// git, a claim record; also those of a round killed before its state
// was saved). Under such a name the remote holds the clone's journal and
// claims, so the clone cannot simply be given another. last is the name
// the clone last synced as ("": it never synced).
func SyncedAs(root, name string) (synced bool, last string, err error) {
	b, err := os.ReadFile(filepath.Join(root, Dir, "state.json"))
	switch {
	case err == nil:
		var st syncState
		if err := json.Unmarshal(b, &st); err != nil {
			return false, "", &SyncError{Op: "machine", Path: filepath.Join(Dir, "state.json"), Err: err}
		}
		last = st.Machine
		if st.Machine == name || slices.Contains(st.Names, name) {
			return true, last, nil
		}
	case !errors.Is(err, os.ErrNotExist):
		return false, "", err
	}
	gitDir := filepath.Join(root, Dir, "git")
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		return false, last, nil // never opened: nothing synced or claimed
	}
	// The author email keeps what git drops from a name (a trailing '.').
	out, err := runGit(gitDir, nil, nil, "log", "--all", "--format=%ae")
	if err != nil {
		return false, last, err
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if sc.Text() == name+"@tavern" {
			return true, last, nil
		}
	}
	return false, last, nil
}
