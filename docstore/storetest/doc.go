// Package storetest holds the test scaffolding that the tests of every
// Tavern package share: where benchmarks put their trees, how a test
// re-executes its own binary as a helper process, and random field values.
//
// # Basics
//
// BenchDir gives a benchmark a fresh directory on the work disk (not
// TMPDIR, which may be tmpfs, where fsync is free), and ReportOpsPerSec
// reports an ops/s metric from the benchmark timer. HelperCommand starts
// the test binary again in a named role; the helper process finds its
// role with HelperRole and runs it instead of the tests.
// FrontmatterValue and HardStrings make random field values of every
// frontmatter type for the differential tests of the JSON writers.
//
// # Caveats
//
//   - For tests only. It imports nothing from Tavern, so that docstore's
//     own tests (package docstore) can use it without an import cycle, and
//     it sits under docstore only because the top level of the tree is
//     fixed: it is on docstore's layer and every package may import it.
//   - BenchDir does not remove what it creates: deleting trees between
//     repetitions slows the creates that follow (ext4 skips recently freed
//     inodes for up to minutes). `make bench` removes .bench/tmp once, at
//     the end of a run.
package storetest
