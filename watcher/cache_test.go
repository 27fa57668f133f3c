package watcher

import (
	"reflect"
	"testing"
)

func sampleCache() *cacheData {
	return &cacheData{Schema: "s1", Records: []cacheRecord{
		{State: FileState{Dev: 1, Ino: 2, Size: 3, MTime: -4, CTime: 5, Seen: 6, Hash: [32]byte{7}},
			Entry: Entry{Path: "agents/a.md", Kind: "agent", Name: "a", Rev: "0700000000000000", Valid: true,
				Fields: map[string]any{"s": "x", "i": 3, "i64": int64(-1 << 40), "u": uint64(1 << 63), "f": 1.5,
					"t": true, "n": nil, "l": []any{"a", 1, []any{false}}, "m": map[string]any{"k": "v"}}}},
		{Entry: Entry{Path: "agents/b.md", Errors: []Problem{{Line: 2, Col: 1, Msg: "agents/b.md:2:1: bad"}}}},
	}}
}

func TestCacheCodecRoundTrip(t *testing.T) {
	want := sampleCache()
	got, err := decodeCache(encodeCache(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", got, want)
	}
	// A value the codec cannot store leaves that record out, not the cache.
	bad := sampleCache()
	bad.Records[0].Entry.Fields["c"] = complex(1, 2)
	got, err = decodeCache(encodeCache(bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 1 || got.Records[0].Entry.Path != "agents/b.md" {
		t.Errorf("uncachable record: got %+v", got.Records)
	}
}

func FuzzDecodeCache(f *testing.F) {
	f.Add(encodeCache(sampleCache()))
	f.Add([]byte{})
	f.Add([]byte{2, 's', '1', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		cd, err := decodeCache(data)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to something that decodes
		// to the same value.
		again, err := decodeCache(encodeCache(cd))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if len(again.Records) != len(cd.Records) {
			t.Fatalf("records: %d then %d", len(cd.Records), len(again.Records))
		}
	})
}
