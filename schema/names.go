package schema

import (
	"fmt"
	"strings"
	"unicode"
)

// ValidAgentName is the one name rule for agents: 1-64 bytes of
// [a-z0-9._-] starting with a letter or digit. Agent names become file
// names (agents/<name>.md, memory/<name>/), lock keys and the
// direct-message channel "@name"; "@user" (the person at the top of every
// hierarchy) can never collide with one. Every --as, every claimer and
// every holder name goes through it.
func ValidAgentName(name string) error {
	if reason := plainName(name); reason != "" {
		return &NameError{Name: name, Reason: reason, Agent: true}
	}
	return nil
}

// ValidPlainName is the agent name rule for the names of other things a
// person makes by name: plans, queues, tokens, budgets (what says which,
// for the error). A name is one shell word, fits --where queue=NAME, and
// cannot clash with another on a case-insensitive file system: 1-64 bytes
// of [a-z0-9._-] starting with a letter or digit. It is for new names:
// things made before the rule are still found by their names
// (ValidName).
func ValidPlainName(what, name string) error {
	if reason := plainName(name); reason != "" {
		return &NameError{Name: name, Reason: reason, What: what}
	}
	return nil
}

// ValidMachineName is the rule of a machine's name (a clone of the store,
// TAVERN_MACHINE): the agent name rule, with upper-case letters too, as
// host names have them (the default name is the host's), 1 to 100 bytes,
// and not ending with '.'. The name is a directory of every clone's
// journal (events/<machine>/), the author of the machine's sync commits,
// which is how a sync says which machine changed a file, and the holder
// of its claims: git drops a trailing '.' from an author (a commit of
// "x." reads back as machine "x"), and a space would split it in two.
func ValidMachineName(name string) error {
	if len(name) == 0 || len(name) > 100 {
		return &NameError{Name: name, Reason: "1 to 100 characters", What: "machine"}
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case (r == '-' || r == '_' || r == '.') && i > 0:
		default:
			return &NameError{Name: name, Reason: machineRule, What: "machine"}
		}
	}
	if strings.HasSuffix(name, ".") {
		return &NameError{Name: name, Reason: machineRule, What: "machine"}
	}
	return nil
}

const machineRule = "use letters, digits, '-', '_' and '.', starting with a letter or digit and not ending with '.'"

// ValidKebab is the rule of a kebab-case field (a memory's topic):
// lower-case letters and digits, in words joined by single hyphens. A
// value given for such a field (--topic) is checked with it before the
// document is made, so a bad one is refused as a name, not as a field
// of a document that was never written.
func ValidKebab(what, name string) error {
	if !kebab.MatchString(name) {
		return &NameError{Name: name, Reason: kebabRule, What: what}
	}
	return nil
}

// plainName is why name breaks the agent name rule, or "".
func plainName(name string) string {
	if len(name) == 0 || len(name) > 64 {
		return "1 to 64 characters"
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '_' || r == '.') && i > 0:
		default:
			return "use lower-case letters, digits, '-', '_' and '.', starting with a letter or digit"
		}
	}
	return ""
}

// AgentLockKey is the lock key of an agent's liveness lock: held by the
// agent's live process, so a lock that can be taken means nobody runs as
// that agent.
func AgentLockKey(name string) string { return "agents/" + name }

// InstanceLockKey is the liveness lock of one spawn instance (its id,
// docstore.NewID): taken by the spawn wrapper and inherited by the child
// as an open descriptor, so it stays held while any process of the
// instance's tree lives. A claim made by the instance is alive exactly as
// long as it is held.
func InstanceLockKey(id string) string { return "instances/" + id }

// PoolLockKey is the liveness lock of a pool: held by its `pool run`
// process for as long as it runs, so a pool document that says running
// while the lock can be taken is the record of a runner that died.
func PoolLockKey(name string) string { return "pools/" + name }

// ChannelLockKey is the lock key that serialises appends to one channel's
// message chunks (backup takes it too, for a consistent copy).
func ChannelLockKey(channel string) string { return "channels/" + channel }

// ValidChannel reports whether name may be a channel: a path-safe name
// without white space, so it works as a directory name and in a shell. A
// leading "@" marks a direct-message channel; the rest must then be a valid
// agent name.
func ValidChannel(name string) error {
	if err := ValidName(name); err != nil {
		return fmt.Errorf("channel %w", err)
	}
	if strings.IndexFunc(name, unicode.IsSpace) >= 0 {
		return &NameError{Name: name, Reason: "channel names cannot contain white space"}
	}
	if rest, ok := strings.CutPrefix(name, "@"); ok {
		if err := ValidAgentName(rest); err != nil {
			return err
		}
	} else if strings.Contains(name, "@") {
		return &NameError{Name: name, Reason: `"@" may only start a channel name (direct messages: @agent)`}
	}
	return nil
}

// ChannelOfFile is the channel whose document, message chunk or note rel
// is, or "": the files whose writers hold the channel's lock
// (ChannelLockKey), a local rm of the channel and a sync that takes in
// another machine's alike. A name no channel may have is no channel's:
// nobody sends to it.
func ChannelOfFile(rel string) string {
	var buf [2]string
	for _, k := range []*Kind{Chunk, Note, Channel} {
		if caps, ok := k.Captures(rel, buf[:0]); ok && len(caps) > 0 && ValidChannel(caps[0]) == nil {
			return caps[0]
		}
	}
	return ""
}
