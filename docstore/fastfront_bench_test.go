package docstore

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// itemDoc is a claimed work item as the queues package writes it: the
// frontmatter of a take+done cycle, with a block depends_on list and a
// single-quoted title.
var itemDoc = []byte(`---
schema_version: 1
id: p05-01a20116-c2a3-7634-8a96-0fa840dec3a0
queue: build
title: 'link it: now'
priority: 5
depends_on:
  - p01-01a20116-c29c-7113-90f4-a9747c217dd8
attempts: 1
max_attempts: 3
created: 2026-11-22T02:29:58.563Z
updated: 2026-11-22T02:30:11.735Z
claimed_by: root@vm
claim_attempt: 1
claim_kind: lease
lease_until: 2026-11-22T02:35:11.735Z
started: 2026-11-22T02:30:11.735Z
---

Link the parser into the binary.
`)

// BenchmarkParseItem: Parse of one claimed item document, the parse a
// queue take+done cycle repeats.
func BenchmarkParseItem(b *testing.B) {
	b.SetBytes(int64(len(itemDoc)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Parse("queues/build/claimed/x.md", itemDoc)
		if err != nil {
			b.Fatal(err)
		}
		if len(d.root.Content) != 2*15 {
			b.Fatalf("parsed %d fields, want 15", len(d.root.Content)/2)
		}
	}
}

// BenchmarkParseFront: the item's frontmatter alone, through the fast
// path and through yaml.v3 (what parseFront did before it).
func BenchmarkParseFront(b *testing.B) {
	d, err := Parse("queues/build/claimed/x.md", itemDoc)
	if err != nil {
		b.Fatal(err)
	}
	front := d.front
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := parseFrontFast(front); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("yaml.v3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n yaml.Node
			if err := yaml.Unmarshal(front, &n); err != nil {
				b.Fatal(err)
			}
		}
	})
}
