package tuples

import (
	"fmt"
	"testing"

	"github.com/tavernhq/tavern/docstore"
)

// BenchmarkOutIn is one durable out plus one in (claim, archive) per op.
func BenchmarkOutIn(b *testing.B) {
	sp := newSpace(b, SpaceOptions{NoJournal: true})
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := sp.Out("job", []docstore.Field{{Key: "n", Value: i}}, OutOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := sp.Inp("job", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRdpScan reads the one match among 500 tuples of a type: the
// cost of matching without an index.
func BenchmarkRdpScan(b *testing.B) {
	sp := newSpace(b, SpaceOptions{NoJournal: true})
	for i := 0; i < 500; i++ {
		out(b, sp, "job", "n", i)
	}
	p := pattern(b, "n=499")
	for b.Loop() {
		if _, err := sp.Rdp("job", p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGlobOverlap(b *testing.B) {
	pairs := [][2]Glob{
		{MustGlob("src/**/*.go"), MustGlob("src/a/b.go")},
		{MustGlob("src/*.go"), MustGlob("src/a/*.go")},
		{MustGlob("web/*/index.html"), MustGlob("web/app/*")},
	}
	for i, p := range pairs {
		b.Run(fmt.Sprint(i), func(b *testing.B) {
			for b.Loop() {
				p[0].Overlaps(p[1])
			}
		})
	}
}
