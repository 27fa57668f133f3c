//go:build race

package queues_test

const raceEnabled = true
