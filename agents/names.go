package agents

import (
	"crypto/rand"
	"fmt"
	"math/big"

	"github.com/tavernhq/tavern/schema"
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

// ValidAgentName is schema.ValidAgentName, the one agent name rule.
func ValidAgentName(name string) error { return schema.ValidAgentName(name) }
