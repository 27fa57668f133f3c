package watcher

import "strings"

// ignoredSuffixes are editor swap, backup and temp names. Documents are
// written atomically by the engine and by well-behaved editors; these names
// are their intermediate steps and never documents.
var ignoredSuffixes = []string{
	"~",                             // vim/emacs backup
	".swp", ".swo", ".swx", ".swpx", // vim swap (usually dot-prefixed too)
	".tmp", ".bak", ".orig", ".part", ".crswap",
	"___jb_tmp___", "___jb_old___", // JetBrains safe write
}

// suffixEnds marks the last bytes of ignoredSuffixes: most names end in
// none of them, and every path of a scan is checked element by element.
var suffixEnds = func() (ends [256]bool) {
	for _, s := range ignoredSuffixes {
		ends[s[len(s)-1]] = true
	}
	return ends
}()

// IgnoredName reports whether a single path element is never a document:
// dot names (engine-private .tmp/, .locks/, .trash/, .index, and .git, .#x
// emacs locks, .x.swp), editor swap/backup names, and vim's write probe
// ("4913", "5036", ...).
func IgnoredName(name string) bool {
	if name == "" {
		return false
	}
	if name[0] == '.' {
		return true
	}
	if len(name) > 1 && name[0] == '#' && name[len(name)-1] == '#' {
		return true // emacs auto-save
	}
	if suffixEnds[name[len(name)-1]] {
		for _, s := range ignoredSuffixes {
			if strings.HasSuffix(name, s) {
				return true
			}
		}
	}
	return vimProbe(name)
}

// vimProbe reports whether name is one of the names vim (and neovim)
// gives the file it creates and removes to learn whether it may write in
// a directory: 4913, else 4913+123, 4913+246, ... while one exists. Only
// those: any all-digit element used to be ignored, which hid directories
// named by a user (a queue "42", a channel "2024") from the watcher, the
// projection, check and the sync.
func vimProbe(name string) bool {
	if len(name) < 4 || len(name) > 9 || name[0] == '0' {
		return false
	}
	n := 0
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
		n = n*10 + int(name[i]-'0')
	}
	return n >= 4913 && (n-4913)%123 == 0
}

// Ignored reports whether any element of the slash-separated relative path
// rel is ignored by IgnoredName.
func Ignored(rel string) bool {
	for rel != "" {
		i := strings.IndexByte(rel, '/')
		if i < 0 {
			return IgnoredName(rel)
		}
		if IgnoredName(rel[:i]) {
			return true
		}
		rel = rel[i+1:]
	}
	return false
}
