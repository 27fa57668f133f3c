package watcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

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
	// The bytes fmt's "%s|%s|%d|" and "%s:%s:%v:%v:%s:%v;" wrote, built
	// without fmt: every one-shot command that reads the index pays for
	// this, and fmt took most of a millisecond over the schema.
	b := make([]byte, 0, 8<<10)
	for _, k := range schema.Kinds() {
		b = append(b, k.Name...)
		b = append(b, '|')
		b = append(b, k.Pattern...)
		b = append(b, '|')
		b = strconv.AppendInt(b, int64(k.Version), 10)
		b = append(b, '|')
		for _, f := range k.Fields {
			b = append(b, f.Name...)
			b = append(b, ':')
			b = append(b, f.Type...)
			b = append(b, ':')
			b = strconv.AppendBool(b, f.Required)
			b = append(b, ":["...)
			for i, e := range f.Enum {
				if i > 0 {
					b = append(b, ' ')
				}
				b = append(b, e...)
			}
			b = append(b, "]:"...)
			b = append(b, f.Pattern...)
			b = append(b, ':')
			b = strconv.AppendBool(b, f.Min != nil)
			b = append(b, ';')
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
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
	// No copy: raw is not written again, so its bytes can be the string
	// every entry's strings are slices of (30 MB at 100k documents).
	cd, err := decodeCache(unsafe.String(unsafe.SliceData(body), len(body)))
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
	var bad atomic.Bool
	const chunk = 4096
	parallel((len(cd.Records)+chunk-1)/chunk, runtime.GOMAXPROCS(0), func(c int) {
		for i := c * chunk; i < min((c+1)*chunk, len(cd.Records)) && !bad.Load(); i++ {
			r := &cd.Records[i]
			p := r.Entry.Path
			if p == "" || Ignored(p) || strings.Contains(p, "..") || !revOf(r.Entry.Rev, &r.State.Hash) ||
				(pat != nil && !pat.matchFile(p)) {
				// The revision is docstore.Revision of the content the
				// state hashed, and the path is one of the section's
				// kind: a mismatch means this is not what we wrote.
				bad.Store(true)
			}
		}
	})
	if bad.Load() {
		return nil, ErrCacheCorrupt
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
//
// With own, every entry is allocated on its own with its strings copied
// out of the section (what a long-running projection wants: an entry
// replaced by an edit is then freed, where entries pointing into the
// section and a shared slab would keep all of it, and the old strings,
// for the life of the process); else they share the section's bytes and
// one slab (cheapest for a one-shot projection).
func loadCache(root string, kinds []string, own bool) (entries []*Entry, states map[string]FileState, bad []string, err error) {
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
	// The entries go to a slab of their own: the records' slab (entry and
	// state side by side) is garbage once the states are in the map, 80
	// bytes a document that a long-running projection would keep.
	var slab []Entry
	if !own {
		slab = make([]Entry, n)
	}
	k := 0
	for _, cd := range cds {
		kind := cd.Kind
		if kk, err := schema.Lookup(kind); err == nil {
			kind = kk.Name // not a substring of the section
		}
		base := len(entries)
		entries = entries[:base+len(cd.Records)]
		if own {
			// The copies are made on every core; the map is filled on one.
			const chunk = 4096
			parallel((len(cd.Records)+chunk-1)/chunk, runtime.GOMAXPROCS(0), func(c int) {
				for i := c * chunk; i < min((c+1)*chunk, len(cd.Records)); i++ {
					entries[base+i] = ownEntry(&cd.Records[i].Entry, kind)
				}
			})
		}
		for i := range cd.Records {
			r := &cd.Records[i]
			if !own {
				slab[k] = r.Entry
				entries[base+i] = &slab[k]
			}
			states[entries[base+i].Path] = r.State
			k++
		}
		cd.Records = nil
	}
	return entries, states, bad, err
}

// ownEntry copies e with its strings in allocations of their own: the
// path alone (maps key on it, and a key outlives the entries stored
// under it), the rest together.
func ownEntry(e *Entry, kind string) *Entry {
	c := *e
	c.Kind = kind
	c.Path = strings.Clone(e.Path)
	all := e.Name + e.Rev + e.raw
	a, b := len(e.Name), len(e.Name)+len(e.Rev)
	c.Name, c.Rev, c.raw = all[:a], all[a:b], all[b:]
	if len(e.Errors) > 0 {
		c.Errors = make([]Problem, len(e.Errors))
		for i, pr := range e.Errors {
			c.Errors[i] = Problem{Line: pr.Line, Col: pr.Col, Msg: strings.Clone(pr.Msg)}
		}
	}
	return &c
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
	replaced := p.replaced
	p.replaced = nil
	p.mu.Unlock()
	// Before the index forgets them: the next watcher's changed fields
	// may be relative to one of them.
	firstErr := p.saveReplaced(replaced)
	for kind := range dirty {
		// Only the picking holds the locks: encoding 100k entries under
		// them held every change (and so every page) back for as long.
		var recs []sectionRecord
		p.mu.RLock()
		p.fw.withState(func(states map[string]FileState) {
			recs = sectionRecords(kind, p.byKind[kind], states)
		})
		p.mu.RUnlock()
		body := encodeSection(kind, recs)
		if err := writeSectionBody(p.root, kind, body); err != nil {
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
	return writeSectionBody(root, cd.Kind, encodeCache(cd))
}

// writeSectionBody writes an encoded section with its magic and checksum.
func writeSectionBody(root, kind string, body []byte) error {
	sum := sha256.Sum256(body)
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
	// Three writes rather than one buffer: at 100k documents the body
	// is 26 MB, and a copy of it would raise the peak by as much.
	for _, part := range [][]byte{[]byte(cacheMagic), body, sum[:]} {
		if _, err := f.Write(part); err != nil {
			f.Close()
			os.Remove(f.Name())
			return err
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	// No fsync: a lost or torn cache is detected by the checksum and
	// rebuilt; it is never the truth.
	if err := os.Rename(f.Name(), filepath.Join(dir, sectionFile(kind))); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
