//go:build long

package queues_test

const longTests = true
