//go:build !tavern_local_only

package main

// The etcd coordination engine (coordination: etcd in tavern.md). It is
// the only engine that brings in a network client (gRPC, protobuf):
// building with -tags tavern_local_only leaves it out, which `make bench`
// uses to measure what linking it costs every command in local mode
// (BenchmarkLocalMode). coordination: git is always there (tavern sync).
import _ "github.com/tavernhq/tavern/queues/etcd"
