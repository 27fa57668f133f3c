package docstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestDocsListsOneDirectory(t *testing.T) {
	s := mustInitStore(t)
	for _, rel := range []string{"memory/a/02.md", "memory/a/01.md", "memory/b/03.md"} {
		if err := s.WriteFile(rel, []byte("---\ntopic: x\n---\n")); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(s.Root(), "memory", "a", ".tmp.md"), nil, 0o644)
	os.WriteFile(filepath.Join(s.Root(), "memory", "a", "notes.txt"), nil, 0o644)
	os.MkdirAll(filepath.Join(s.Root(), "memory", "a", "sub.md"), 0o755)
	got, err := s.Docs("memory/a")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[memory/a/01.md memory/a/02.md]" {
		t.Errorf("Docs(memory/a) = %v", got)
	}
	if got, err := s.Docs("memory/nobody"); err != nil || len(got) != 0 {
		t.Errorf("Docs of a missing directory: %v %v", got, err)
	}
	if _, err := s.Docs("../outside"); err == nil {
		t.Error("Docs outside the store: no error")
	}
}
