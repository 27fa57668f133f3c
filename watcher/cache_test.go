package watcher

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

func sampleCache() *cacheData {
	return &cacheData{Schema: "s1", Kind: "agent", Records: []cacheRecord{
		{State: FileState{Dev: 1, Ino: 2, Size: 3, MTime: -4, CTime: 5, Seen: 6, Hash: [32]byte{7}},
			Entry: Entry{Path: "agents/a.md", Kind: "agent", Name: "a", Rev: "0700000000000000", Valid: true,
				Fields: map[string]any{"s": "x", "i": 3, "i64": int64(-1 << 40), "u": uint64(1 << 63), "f": 1.5,
					"t": true, "n": nil, "l": []any{"a", 1, []any{false}}, "m": map[string]any{"k": "v"}}}},
		{Entry: Entry{Path: "agents/b.md", Kind: "agent", Errors: []Problem{{Line: 2, Col: 1, Msg: "agents/b.md:2:1: bad"}}}},
	}}
}

// decoded returns cd with every entry's fields decoded, as handed out.
func decoded(cd *cacheData) *cacheData {
	for i := range cd.Records {
		cd.Records[i].Entry = cd.Records[i].Entry.view()
	}
	return cd
}

func TestCacheCodecRoundTrip(t *testing.T) {
	want := sampleCache()
	got, err := decodeCache(string(encodeCache(want)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decoded(got), want) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", got, want)
	}
	// A value the codec cannot store leaves that record out, not the cache.
	bad := sampleCache()
	bad.Records[0].Entry.Fields["c"] = complex(1, 2)
	got, err = decodeCache(string(encodeCache(bad)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 1 || got.Records[0].Entry.Path != "agents/b.md" {
		t.Errorf("uncachable record: got %+v", got.Records)
	}
	// Still-encoded fields are written back as they are.
	again, err := decodeCache(string(encodeCache(got)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decoded(again), decoded(got)) {
		t.Errorf("raw round trip:\ngot  %+v\nwant %+v", again, got)
	}
}

func TestDecodeSomeFields(t *testing.T) {
	cd, err := decodeCache(string(encodeCache(sampleCache())))
	if err != nil {
		t.Fatal(err)
	}
	got := decodeSomeFields(cd.Records[0].Entry.raw, []string{"s", "m", "absent"})
	want := map[string]any{"s": "x", "m": map[string]any{"k": "v"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := decodeSomeFields(cd.Records[1].Entry.raw, []string{"s"}); got != nil {
		t.Errorf("entry without fields: got %v, want nil", got)
	}
}

func TestKindPattern(t *testing.T) {
	tests := []struct {
		kind, rel string
		dir, want bool
	}{
		{"agent", "agents/a.md", false, true},
		{"agent", "agents/a.txt", false, false},
		{"agent", "agents/x/a.md", false, false},
		{"agent", "agents", true, true},
		{"agent", "agents/x", true, false},
		{"agent", "queues", true, false},
		{"agent", "", true, true},
		{"item", "queues/q/pending/1.md", false, true},
		{"item", "queues/q/other/1.md", false, false},
		{"item", "queues/q/queue.md", false, false},
		{"item", "queues/q/done", true, true},
		{"item", "queues/q/nope", true, false},
		{"item", "queues/.q", true, false},
		{"queue", "queues/q/queue.md", false, true},
		{"config", "tavern.md", false, true},
		{"config", "tavern", true, false},
		{"agent", "a.md", false, false},
		{"config", "agents/tavern.md", false, false},
		{"item", "queues/q/done/.x.md", false, false},
		{"item", "queues/q/done/x.md", false, true},
	}
	// One filter per kind across all cases: the memo must follow the
	// directory changes.
	shared := map[string]*scopeFilter{}
	for _, tt := range tests {
		f := shared[tt.kind]
		if f == nil {
			sc, _ := newScope([]string{tt.kind})
			f = &scopeFilter{sc: sc}
			shared[tt.kind] = f
		}
		if got := !f.excludes(tt.rel, tt.dir); got != tt.want {
			t.Errorf("shared filter: %s covers %q (dir %v): got %v, want %v", tt.kind, tt.rel, tt.dir, got, tt.want)
		}
	}
	for _, tt := range tests {
		sc, err := newScope([]string{tt.kind})
		if err != nil {
			t.Fatal(err)
		}
		if got := !sc.excludes(tt.rel, tt.dir); got != tt.want {
			t.Errorf("%s covers %q (dir %v): got %v, want %v", tt.kind, tt.rel, tt.dir, got, tt.want)
		}
		f := &scopeFilter{sc: sc}
		for range 2 { // cold, then from the memo
			if got := !f.excludes(tt.rel, tt.dir); got != tt.want {
				t.Errorf("filter: %s covers %q (dir %v): got %v, want %v", tt.kind, tt.rel, tt.dir, got, tt.want)
			}
		}
	}
}

func FuzzDecodeCache(f *testing.F) {
	f.Add(encodeCache(sampleCache()))
	f.Add([]byte{})
	f.Add([]byte{2, 's', '1', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		cd, err := decodeCache(string(data))
		if err != nil {
			return
		}
		for i := range cd.Records {
			cd.Records[i].Entry.Kind = cd.Kind
			_ = decodeSomeFields(cd.Records[i].Entry.raw, []string{"a"})
		}
		// Whatever decodes must encode back to something that decodes
		// to the same value.
		again, err := decodeCache(string(encodeCache(cd)))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if len(again.Records) != len(cd.Records) {
			t.Fatalf("records: %d then %d", len(cd.Records), len(again.Records))
		}
	})
}

// TestSchemaFingerprintAsFmt: the fingerprint is built without fmt, from
// the bytes fmt wrote before, so indexes written by earlier binaries of
// the same schema stay valid.
func TestSchemaFingerprintAsFmt(t *testing.T) {
	h := sha256.New()
	for _, k := range schema.Kinds() {
		fmt.Fprintf(h, "%s|%s|%d|", k.Name, k.Pattern, k.Version)
		for _, f := range k.Fields {
			fmt.Fprintf(h, "%s:%s:%v:%v:%s:%v;", f.Name, f.Type, f.Required, f.Enum, f.Pattern, f.Min != nil)
		}
	}
	if got, want := schemaFingerprint(), fmt.Sprintf("%x", h.Sum(nil)[:12]); got != want {
		t.Errorf("schemaFingerprint() = %s, want %s", got, want)
	}
}
