// Package schema defines every kind of Tavern document: where its files
// live (a path pattern such as "agents/{name}.md"), its fields with types,
// enums, defaults and required flags, its schema_version and migrations,
// and a JSON Schema export for editors.
//
// Validation works on yaml.v3 nodes so every problem has a line and
// column: "agents/alice.md:5:8: state: "bogus" is not one of idle, ...".
// Fields the schema does not know are kept and reported only in strict
// mode, so people and tools can add their own.
//
// Migrations upgrade documents written by older versions. They are applied
// in memory on read (the document on disk is untouched) and written back
// by `tavern migrate`. A document without schema_version is version 0.
//
// This package is pure: it imports no other Tavern package and does no
// I/O.
package schema
