package docstore

import (
	"testing"
	"time"
)

// SetMany must give exactly what successive Set calls give.
func TestSetManyMatchesSet(t *testing.T) {
	docs := []string{
		"---\ntitle: a\nattempts: 1 # counted\nqueue: 'q'\n---\nbody\n",
		"---\r\ntitle: a\r\nattempts: 1\r\n---\r\n",
		"---\n# head comment\ntitle: \"quoted\"\ntags:\n  - x\n  - y\n\nattempts: 2\n---\n",
		"---\n{title: a, attempts: 1}\n---\n",
		"---\n---\nempty front\n",
		"---\ntitle: |\n  multi\n  line\nattempts: 0\n---\n",
	}
	when := time.Date(2026, 11, 22, 1, 2, 3, 4e6, time.UTC)
	sets := [][][2]any{
		{{"attempts", 2}, {"title", "b"}, {"claimed_by", "w1"}, {"lease_until", when}},
		{{"title", "two\nlines"}, {"attempts", 3}, {"new", []string{"a", "b"}}},
		{{"tags", "now scalar"}, {"queue", "q2"}, {"queue", "q3"}, {"x", 1}, {"x", 2}},
		{{"title", "it's: tricky # not a comment"}, {"attempts", -1}},
	}
	for i, src := range docs {
		for j, fields := range sets {
			want, err := Parse("x.md", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			got := want.Clone()
			for _, kv := range fields {
				if err := want.Set(kv[0].(string), kv[1]); err != nil {
					t.Fatal(err)
				}
			}
			if err := got.SetMany(fields); err != nil {
				t.Fatalf("doc %d set %d: %v", i, j, err)
			}
			if string(got.Bytes()) != string(want.Bytes()) {
				t.Errorf("doc %d set %d:\ngot:\n%q\nwant:\n%q", i, j, got.Bytes(), want.Bytes())
			}
		}
	}
}
