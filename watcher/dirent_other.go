//go:build !linux

package watcher

import "os"

// readDir lists the directory abs (hint: the entries expected).
func readDir(abs string, hint int) ([]dirent, error) {
	des, err := os.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	ents := make([]dirent, len(des))
	for i, e := range des {
		ents[i] = dirent{name: e.Name(), typ: e.Type()}
	}
	return ents, nil
}
