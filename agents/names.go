package agents

import (
	"crypto/rand"
	"fmt"
	"math/big"
)

// Themed names for agents spawned without one: an adjective and a piece of
// tavern furniture ("amber-tankard"). Names are taken by creating the agent
// document exclusively, so two processes picking the same name cannot both
// win; the loser draws again (see CreateAgent).
var (
	nameAdjectives = []string{
		"amber", "brisk", "copper", "dusty", "ember", "foamy", "gilded", "hearty",
		"idle", "jolly", "keen", "lusty", "merry", "nimble", "oaken", "plucky",
		"quiet", "rowdy", "smoky", "tipsy", "umber", "velvet", "wry", "yeasty",
		"bold", "crimson", "dapper", "frothy", "grizzled", "hoppy", "iron", "misty",
	}
	nameNouns = []string{
		"tankard", "flagon", "barkeep", "cask", "hearth", "bard", "lantern", "stool",
		"tapster", "goblet", "keg", "innkeep", "minstrel", "cellar", "ale", "mead",
		"rafter", "ledger", "shutter", "candle", "bellows", "griddle", "pewter", "tinker",
		"squire", "drover", "cooper", "ostler", "chandler", "vintner", "wench", "ranger",
	}
)

func randInt(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil { // crypto/rand does not fail on Linux; fall back to 0
		return 0
	}
	return int(v.Int64())
}

// themedName draws a name. After a few collisions a number is appended so
// the space never runs out.
func themedName(try int) string {
	n := nameAdjectives[randInt(len(nameAdjectives))] + "-" + nameNouns[randInt(len(nameNouns))]
	if try >= 4 {
		n += fmt.Sprintf("-%d", randInt(100000))
	}
	return n
}

// ValidAgentName reports whether name can be an agent name: 1-64 bytes of
// [a-z0-9._-] starting with a letter or digit. Names become file names,
// lock keys and the direct-message channel "@name", and "@user" (the
// person at the top of every hierarchy) can never collide with an agent.
func ValidAgentName(name string) error {
	if len(name) == 0 || len(name) > 64 {
		return fmt.Errorf("%w %q: 1 to 64 characters", ErrBadAgentName, name)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '_' || r == '.') && i > 0:
		default:
			return fmt.Errorf("%w %q: use lower-case letters, digits, '-', '_' and '.', starting with a letter or digit", ErrBadAgentName, name)
		}
	}
	return nil
}
