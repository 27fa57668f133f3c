package watcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tavernhq/tavern/schema"
)

// CacheFile is the index cache's name in the store root. It is a dot file:
// engine-private, ignored by the watcher, safe to delete at any time.
const CacheFile = ".index"

// cacheMagic starts every cache file; the version after it changes when the
// format or the meaning of Entry changes.
const cacheMagic = "tavern-index\x00v1\x00"

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

type cacheData struct {
	Schema  string
	Records []cacheRecord
}

func init() {
	// Interface values in Entry.Fields.
	gob.Register([]any{})
	gob.Register(map[string]any{})
}

// schemaFingerprint changes whenever the kinds' names, patterns, versions
// or fields change, so entries parsed under other rules are not reused.
func schemaFingerprint() string {
	h := sha256.New()
	for _, k := range schema.Kinds() {
		fmt.Fprintf(h, "%s|%s|%d|", k.Name, k.Pattern, k.Version)
		for _, f := range k.Fields {
			fmt.Fprintf(h, "%s:%s:%v:%v:%s:%v;", f.Name, f.Type, f.Required, f.Enum, f.Pattern, f.Min != nil)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:12])
}

// loadCache reads the index cache of the store at root. The entries are
// trusted only together with their states: the watcher re-reads every
// file whose (inode, size, mtime, ctime) differs or is racy.
func loadCache(root string) ([]*Entry, map[string]FileState, error) {
	data, err := os.ReadFile(filepath.Join(root, CacheFile))
	if err != nil {
		return nil, nil, err
	}
	if !bytes.HasPrefix(data, []byte(cacheMagic)) || len(data) < len(cacheMagic)+sha256.Size {
		return nil, nil, ErrCacheCorrupt
	}
	body := data[len(cacheMagic) : len(data)-sha256.Size]
	sum := sha256.Sum256(body)
	if !bytes.Equal(sum[:], data[len(data)-sha256.Size:]) {
		return nil, nil, ErrCacheCorrupt
	}
	var cd cacheData
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&cd); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCacheCorrupt, err)
	}
	if cd.Schema != schemaFingerprint() {
		return nil, nil, ErrCacheStale
	}
	entries := make([]*Entry, 0, len(cd.Records))
	states := make(map[string]FileState, len(cd.Records))
	for i := range cd.Records {
		r := &cd.Records[i]
		if r.Entry.Path == "" || Ignored(r.Entry.Path) || strings.Contains(r.Entry.Path, "..") ||
			r.Entry.Rev != hex.EncodeToString(r.State.Hash[:8]) {
			// The revision is docstore.Revision of the content the state
			// hashed: a mismatch means this is not what we wrote.
			return nil, nil, ErrCacheCorrupt
		}
		entries = append(entries, &r.Entry)
		states[r.Entry.Path] = r.State
	}
	return entries, states, nil
}

// SaveCache writes the index cache (atomically: temp file in .tmp/, then
// rename). It is a no-op when nothing changed since the last save.
func (p *Projection) SaveCache() error {
	states := p.fw.State()
	p.mu.Lock()
	if !p.dirty {
		p.mu.Unlock()
		return nil
	}
	cd := cacheData{Schema: schemaFingerprint(), Records: make([]cacheRecord, 0, len(p.docs))}
	for path, e := range p.docs {
		st, ok := states[path]
		if !ok {
			continue // not yet confirmed by the watcher
		}
		cd.Records = append(cd.Records, cacheRecord{State: st, Entry: *e})
	}
	p.dirty = false
	p.mu.Unlock()
	err := writeCache(p.root, &cd)
	if err != nil {
		p.mu.Lock()
		p.dirty = true
		p.mu.Unlock()
	}
	return err
}

func writeCache(root string, cd *cacheData) error {
	var buf bytes.Buffer
	buf.WriteString(cacheMagic)
	if err := gob.NewEncoder(&buf).Encode(cd); err != nil {
		return err
	}
	sum := sha256.Sum256(buf.Bytes()[len(cacheMagic):])
	buf.Write(sum[:])
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
	if err := os.Rename(f.Name(), filepath.Join(root, CacheFile)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
