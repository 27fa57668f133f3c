package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher"
)

// TestLsJSONLongListing: a listing long enough to be written on several
// threads (printEntries) is byte for byte the one appendDocs writes on
// one, with and without bodies, and with an invalid document among them.
func TestLsJSONLongListing(t *testing.T) {
	dir := t.TempDir()
	s, _, err := docstore.Init(filepath.Join(dir, ".tavern"), "long")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 700 {
		state := "idle"
		if i == 333 {
			state = "nonsense" // invalid: listed and marked
		}
		text := fmt.Sprintf("---\nname: a%04d\nrole: r%d\nstate: %s\nnote: \"quote \\\" tab \\t ü %d\"\n---\nbody of a%04d\n", i, i%7, state, i, i)
		if err := os.WriteFile(filepath.Join(s.Root(), "agents", fmt.Sprintf("a%04d.md", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, body := range []bool{false, true} {
		args := []string{"tavern", "--dir", dir, "ls", "agents", "--json"}
		if body {
			args = append(args, "--body")
		}
		var got, stderr bytes.Buffer
		t.Setenv("TAVERN_DAEMON", "off")
		if err := run(context.Background(), args, nil, &got, &stderr); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		want := sequentialListing(t, s, body)
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("body=%v: the listing written in parts differs from the sequential one (%d and %d bytes)", body, got.Len(), len(want))
		}
		var list []map[string]any
		if err := json.Unmarshal(got.Bytes(), &list); err != nil || len(list) != 700 {
			t.Errorf("body=%v: %d documents, %v", body, len(list), err)
		}
	}
}

// sequentialListing is ls --json of every agent, written by appendDocs on
// one thread.
func sequentialListing(t *testing.T, s *docstore.Store, body bool) []byte {
	t.Helper()
	p, err := watcher.Open(s, watcher.Options{Kinds: []string{"agent"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := lsRun(p, lsArgs{Kind: "agent"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var docs []*docObject
	for i := range res.Entries {
		o, err := entryJSON(s, &res.Entries[i], body)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, o)
	}
	b, err := appendDocs(nil, docs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
