// Package schema defines every kind of Tavern document: where its files
// live, its fields, how it is validated and migrated, and the few naming
// rules the other packages share.
//
// # Basics
//
// A Kind (Lookup, Kinds, KindOfPath) has a path pattern such as
// "agents/{name}.md", a list of Field definitions (type, enum, default,
// required), a schema_version and the Migrations that reach it, and a JSON
// Schema export for editors. A document's kind is a function of its path
// alone.
//
// Validation works on yaml.v3 nodes, so every problem (a *FieldError) has
// a line and column: "agents/alice.md:5:8: state: "bogus" is not one of
// idle, ...". Fields the schema does not know are kept, and reported only
// in strict mode, so people and tools can add their own.
//
// Migrations upgrade documents written by older versions. They are applied
// in memory on read (the document on disk is untouched) and written back
// by `tavern migrate`. A document without schema_version is version 0.
//
// The shared rules: ValidName for any name that becomes a path segment,
// ValidAgentName for agents (and every --as, claimer and holder), AgentLockKey and
// ChannelLockKey for the locks that several packages take, and
// FormatTime/ParseTime for the engine's RFC 3339 timestamps.
//
// # Caveats
//
//   - This package is pure: it imports no other Tavern package and does no
//     I/O.
//   - The registry (Register, Lookup) is filled from package init and is
//     not locked: register kinds before any goroutine reads documents.
//   - Timestamps the engine writes are UTC with millisecond precision, so
//     they sort as text; hand-written ones with other offsets are valid
//     but do not.
package schema
