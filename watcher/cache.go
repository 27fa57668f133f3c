package watcher

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tavernhq/tavern/schema"
)

// The index cache.
//
// .tavern/.index is a directory with one section file per kind (named
// after the kind; _nokind for .md files that match no kind's pattern):
//
//	"tavern-index\0v3\0" body sha256(body)
//	body = schema-fingerprint kind count record*
//
// (cachecodec.go has the byte layout.) A record is a document's path, its
// FileState (device, inode, size, mtime, ctime, content SHA-256, and when
// it was read) and its Entry, with the frontmatter fields in a compact
// tagged encoding behind a length prefix. Loading a section checks the
// magic and version, the checksum, the schema fingerprint (a hash of
// every kind's pattern, version and fields), that every path is of the
// section's kind and that every revision is the one its hash gives; any
// failure discards the section, which is rebuilt from the documents. A
// load keeps the fields encoded, as slices of one string: a query
// decodes only the keys its --where conditions name, and everything
// only for the entries that match. An older single-file .index is
// replaced.
//
// Freshness. A cached entry is used only if its file's lstat still gives
// the same (device, inode, size, mtime, ctime) and the state is not
// "racy" (mtime or ctime within 2 s of the moment it was read, when a
// same-tick rewrite could hide behind an equal stat); otherwise the file
// is read, hashed, and parsed again if the hash differs. The lstats run
// in parallel relative to an open descriptor of each directory (fstatat),
// and the directories are listed (getdents, whose entry types spare an
// lstat per directory), so new, renamed and deleted files are found too.
// A scoped projection walks only the directories the kind's path pattern
// can match and loads and writes only its kind's section. That is enough:
// a file's kind is a function of its path, so no file outside those
// directories can be a document of the kind, and every file inside is
// checked on every run. Sections of other kinds may then be out of date
// on disk; they are checked the same way when their kind is next queried.
// A section is rewritten (temp file, rename; no fsync: a torn one fails
// its checksum) only when something of its kind changed, including a stat
// change without a content change (a touch, a settled racy file), so such
// files are not re-read on every run. Concurrent writers each replace a
// whole section; the last one wins and either is valid.

// CacheFile is the index cache's directory in the store root: one file
// per kind (see sectionFile). It is a dot name: engine-private, ignored by
// the watcher, safe to delete at any time.
const CacheFile = ".index"

// cacheMagic starts every section file; the version after it changes when
// the format or the meaning of Entry changes.
const cacheMagic = "tavern-index\x00v3\x00"

// ErrCacheCorrupt is returned when the index cache fails its checksum or
// does not decode. The caller rebuilds it from the documents.
var ErrCacheCorrupt = errors.New("index cache corrupt")

// ErrCacheStale is returned when the index cache was written for other
// schema definitions (kinds, versions) than this binary's.
var ErrCacheStale = errors.New("index cache written by another schema")

type cacheRecord struct {
	State FileState
	Entry Entry
}

// cacheData is one section: the documents of one kind ("" for files
// that match no kind).
type cacheData struct {
	Schema  string
	Kind    string
	Records []cacheRecord
}

// sectionFile names the section of a kind inside the cache directory.
func sectionFile(kind string) string {
	if kind == "" {
		return "_nokind"
	}
	return kind
}

var fingerprint = sync.OnceValue(func() string {
	h := sha256.New()
	for _, k := range schema.Kinds() {
		fmt.Fprintf(h, "%s|%s|%d|", k.Name, k.Pattern, k.Version)
		for _, f := range k.Fields {
			fmt.Fprintf(h, "%s:%s:%v:%v:%s:%v;", f.Name, f.Type, f.Required, f.Enum, f.Pattern, f.Min != nil)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:12])
})

// schemaFingerprint changes whenever the kinds' names, patterns, versions
// or fields change, so entries parsed under other rules are not reused.
// (Kinds register in init: it is computed once, on first use.)
func schemaFingerprint() string { return fingerprint() }

// allSections lists every section name: each kind, then "" (no kind).
func allSections() []string {
	var out []string
	for _, k := range schema.Kinds() {
		out = append(out, k.Name)
	}
	return append(out, "")
}

// loadSection reads the cache section of kind. The entries are trusted
// only together with their states: the watcher lstats every file and
// re-reads those whose (inode, size, mtime, ctime) differs or is racy.
func loadSection(root, kind string) (*cacheData, error) {
	raw, err := os.ReadFile(filepath.Join(root, CacheFile, sectionFile(kind)))
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(raw, []byte(cacheMagic)) || len(raw) < len(cacheMagic)+sha256.Size {
		return nil, ErrCacheCorrupt
	}
	body := raw[len(cacheMagic) : len(raw)-sha256.Size]
	sum := sha256.Sum256(body)
	if !bytes.Equal(sum[:], raw[len(raw)-sha256.Size:]) {
		return nil, ErrCacheCorrupt
	}
	cd, err := decodeCache(string(body)) // one copy; every string is a slice of it
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCacheCorrupt, err)
	}
	if cd.Schema != schemaFingerprint() {
		return nil, ErrCacheStale
	}
	var pat *kindPattern
	if kind != "" {
		k, err := schema.Lookup(kind)
		if err != nil || k.Name != kind {
			return nil, ErrCacheCorrupt
		}
		pat = newKindPattern(k)
	}
	if cd.Kind != kind {
		return nil, ErrCacheCorrupt
	}
	for i := range cd.Records {
		r := &cd.Records[i]
		p := r.Entry.Path
		if p == "" || Ignored(p) || strings.Contains(p, "..") || !revOf(r.Entry.Rev, &r.State.Hash) ||
			(pat != nil && !pat.matchFile(p)) {
			// The revision is docstore.Revision of the content the state
			// hashed, and the path is one of the section's kind: a
			// mismatch means this is not what we wrote.
			return nil, ErrCacheCorrupt
		}
	}
	return cd, nil
}

// revOf reports whether rev is docstore.Revision of content hashing to h
// (the hex of its first 8 bytes), without allocating.
func revOf(rev string, h *[32]byte) bool {
	const digits = "0123456789abcdef"
	if len(rev) != 16 {
		return false
	}
	for i := range 8 {
		if rev[2*i] != digits[h[i]>>4] || rev[2*i+1] != digits[h[i]&15] {
			return false
		}
	}
	return true
}

// loadCache reads the sections of kinds (every section if nil) and
// returns their entries and states. Sections that are missing, corrupt
// or stale are left out and returned in bad, to be rebuilt; the first
// such error is returned too.
func loadCache(root string, kinds []string) (entries []*Entry, states map[string]FileState, bad []string, err error) {
	if kinds == nil {
		kinds = allSections()
	}
	var cds []*cacheData
	n := 0
	for _, kind := range kinds {
		cd, e := loadSection(root, kind)
		if e != nil {
			bad = append(bad, kind)
			if err == nil {
				err = e
			}
			continue
		}
		cds = append(cds, cd)
		n += len(cd.Records)
	}
	states = make(map[string]FileState, n)
	entries = make([]*Entry, 0, n)
	for _, cd := range cds {
		for i := range cd.Records {
			r := &cd.Records[i]
			entries = append(entries, &r.Entry)
			states[r.Entry.Path] = r.State
		}
	}
	return entries, states, bad, err
}

// SaveCache writes the sections of the index cache whose kind changed
// since they were loaded or saved (each atomically: temp file in .tmp/,
// then rename). A projection scoped to some kinds writes only theirs.
func (p *Projection) SaveCache() error {
	p.mu.Lock()
	if len(p.dirty) == 0 {
		p.mu.Unlock()
		return nil
	}
	dirty := p.dirty
	p.dirty = map[string]bool{}
	p.mu.Unlock()
	states := p.fw.State()
	var firstErr error
	for kind := range dirty {
		p.mu.RLock()
		cd := cacheData{Schema: schemaFingerprint(), Kind: kind, Records: make([]cacheRecord, 0, len(p.byKind[kind]))}
		for path, e := range p.byKind[kind] {
			st, ok := states[path]
			if !ok {
				continue // not yet confirmed by the watcher
			}
			cd.Records = append(cd.Records, cacheRecord{State: st, Entry: *e})
		}
		p.mu.RUnlock()
		if err := writeSection(p.root, &cd); err != nil {
			p.mu.Lock()
			p.dirty[kind] = true
			p.mu.Unlock()
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

func writeSection(root string, cd *cacheData) error {
	var buf bytes.Buffer
	buf.WriteString(cacheMagic)
	buf.Write(encodeCache(cd))
	sum := sha256.Sum256(buf.Bytes()[len(cacheMagic):])
	buf.Write(sum[:])
	dir := filepath.Join(root, CacheFile)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		// The single-file cache of an older version: replace it.
		if err := os.Remove(dir); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	tmpDir := filepath.Join(root, ".tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(tmpDir, "index-*")
	if err != nil {
		return err
	}
	_ = f.Chmod(0o644) // readable like the documents it indexes
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	// No fsync: a lost or torn cache is detected by the checksum and
	// rebuilt; it is never the truth.
	if err := os.Rename(f.Name(), filepath.Join(dir, sectionFile(cd.Kind))); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
