// Package recall is what agents remember: each agent's private memory,
// the knowledge they share, and the keyword index that searches both.
//
// # Basics
//
// A Memory is memory/<agent>/<id>.md: a topic, a text, and core: true for
// what an agent should always be briefed with. Every memory function takes
// the acting agent and reads only that agent's directory. A Knowledge
// entry is knowledge/<domain>/<id>.md, shared, with a title and a
// contributor. Both have Add, Get (by id or a unique id prefix), List,
// Search, Inspect (an entry and the entries most like it) and Archive.
// Archiving sets archived: true: archived entries are hidden from lists,
// search, inspect and wake, never deleted.
//
// Search and Inspect use an Index (BuildIndex, search.go) built per call
// from the entries in scope (one agent's memory, or all knowledge): BM25
// over Snowball English stems ("databases" is "database"), query words of
// four letters or more also matching the words they begin ("postgres"
// finds "PostgreSQL"), titles weighted twice and tags (a knowledge
// domain, a memory topic) half. Inspect leaves the tags out, so two
// entries are not related merely by their domain. Matcher applies the
// same word matching without an index (`tavern context`).
//
// # Caveats
//
//   - Memory is private by construction, not by permission: the files
//     stay readable to anyone with access to .tavern/. Privacy is not
//     secrecy.
//   - There is no stored index. At the scale the design assumes (<1000
//     memories per agent, <10k knowledge entries) building one costs less
//     than reading the files, which every call does anyway to see hand
//     edits; far larger stores would search slowly.
//   - Search matches words, not meanings: stems and prefixes, no
//     synonyms ("car" does not find "automobile").
package recall
