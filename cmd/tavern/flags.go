package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// The flags several commands share. Each call makes a new flag: urfave/cli
// keeps parse state in a flag, so one value must not serve two commands.

func dirFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "dir",
		Usage:   "the .tavern directory to use (default: search upward from the working directory)",
		EnvVars: []string{"TAVERN_DIR"},
	}
}

func jsonFlag() cli.Flag { return &cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"} }

// asFlag names the agent a command acts for. The default is resolved in
// one place (actorOf, agents.ResolveActor) and said once here: the flag
// has no EnvVars, or help would show it a second time.
func asFlag() cli.Flag {
	return &cli.StringFlag{Name: "as", Usage: "act as `AGENT` (default: $TAVERN_AGENT, else you: \"user\")"}
}

// agentFlag is --as for the commands that act only for an agent and have
// no default user (prime, sleep, wake): without it or $TAVERN_AGENT they
// exit 2.
func agentFlag() cli.Flag {
	return &cli.StringFlag{Name: "as", Usage: "act as `AGENT` (default: $TAVERN_AGENT; required: no user fallback)"}
}

// sessionAgentFlag is --as for a hook and the MCP server, which act as the
// agent of the tool's session when none is named.
func sessionAgentFlag() cli.Flag {
	return &cli.StringFlag{Name: "as", Usage: "act as `AGENT` (default: $TAVERN_AGENT, else the session's own agent)"}
}

// bodyFlag reads a document body from a file or stdin.
func bodyFlag() cli.Flag {
	return &cli.StringFlag{Name: "body", Usage: "read the markdown body from `FILE` (- for stdin)"}
}

// instanceFlag is the caller's agent instance: each `tavern spawn` of an
// agent is a new instance (TAVERN_INSTANCE in the child's environment).
// Token slots and reservations record it, and a release or unreserve by
// name from another instance of the same agent is fenced (exit 4).
func instanceFlag() cli.Flag {
	return &cli.StringFlag{Name: "instance", Usage: "act as agent instance `ID`", EnvVars: []string{"TAVERN_INSTANCE"}}
}

func attemptFlag() cli.Flag {
	return &cli.IntFlag{Name: "attempt", Usage: "the claim attempt `N` printed by take (fencing token; 0 = the current claim)", Action: func(_ *cli.Context, v int) error {
		if v < 0 { // attempts count from 1: no claim ever had this one
			return usageErr("--attempt %d: a claim attempt cannot be negative (take prints it: 1, 2, ...; 0 is the current claim)", v)
		}
		return nil
	}}
}

// Zero values are values: a numeric or duration flag the user set is
// honoured as given (commands read it with c.IsSet where the library's
// zero means "the default"), or refused with exit 2 saying why, where zero
// has no meaning. The refusals are the flags' Actions, which urfave/cli
// runs only for flags given on the command line.

// atLeastOne refuses a count below 1: why says what 0 would mean.
func atLeastOne(name, why string) func(*cli.Context, int) error {
	return func(_ *cli.Context, v int) error {
		if v < 0 { // why is about zero: a negative count is no count
			return usageErr("--%s %d: a count cannot be negative; give 1 or more", name, v)
		}
		if v < 1 {
			return usageErr("--%s %d: %s; give 1 or more", name, v, why)
		}
		return nil
	}
}

// positiveDur refuses a duration of zero or less: why says what it
// would mean.
func positiveDur(name, why string) func(*cli.Context, time.Duration) error {
	return func(_ *cli.Context, v time.Duration) error {
		if v <= 0 {
			return usageErr("--%s %s: %s; give a positive duration", name, v, why)
		}
		return nil
	}
}

// notNegative refuses a negative duration (a zero is meaningful: no
// wait, no delay, at once).
func notNegative(name string) func(*cli.Context, time.Duration) error {
	return func(_ *cli.Context, v time.Duration) error {
		if v < 0 {
			return usageErr("--%s %s: a duration cannot be negative", name, v)
		}
		return nil
	}
}

// choiceGiven refuses an empty value for a flag of a closed set of
// choices (want): given as "" (an unset variable in --before "$STAGE"),
// it would silently be the default, which the user did not choose.
func choiceGiven(name, want string) func(*cli.Context, string) error {
	return func(_ *cli.Context, v string) error {
		if strings.TrimSpace(v) == "" {
			return usageErr("--%s %q: empty; want %s (or leave --%s out for the default)", name, v, want, name)
		}
		return nil
	}
}

// limitFlag is --limit N: at most N results. Zero would show nothing, so
// it is refused (as gh does); def 0 means no limit unless given.
func limitFlag(usage string, def int) *cli.IntFlag {
	return &cli.IntFlag{Name: "limit", Value: def, Usage: usage, Action: atLeastOne("limit", "a limit of 0 would show nothing (omit --limit for the default)")}
}

// waitFlag is --wait DUR: block up to DUR; 0 (the default) answers at once.
func waitFlag(usage string) *cli.DurationFlag {
	return &cli.DurationFlag{Name: "wait", Usage: usage + " (0: answer at once)", Action: notNegative("wait")}
}

// explicit lists the flags among names the user gave, as the library's
// field names (max-attempts: max_attempts): a zero among them is the
// value zero, not "the default" (queues.QueueOptions.Explicit).
func explicit(c *cli.Context, names ...string) []string {
	var out []string
	for _, n := range names {
		if c.IsSet(n) {
			out = append(out, strings.ReplaceAll(n, "-", "_"))
		}
	}
	return out
}

// urfaveFlagString is urfave/cli's own flag line for help.
var urfaveFlagString = cli.FlagStringer

func init() { cli.FlagStringer = flagString }

// noDefault is a default that says nothing: off, zero, empty.
var noDefault = regexp.MustCompile(` \(default: (false|0|0s|"")\)`)

// flagString is a flag's line in help: urfave/cli's, without a default
// that says nothing (a flag that is off, zero or empty unless given), so
// each default that matters is said once, from the flag's Value or
// DefaultText, never also in its usage.
func flagString(f cli.Flag) string { return noDefault.ReplaceAllString(urfaveFlagString(f), "") }

// exprSlice is the value of a repeatable flag whose every value is kept
// whole. A StringSliceFlag splits a value at commas, and a --where
// expression may hold one (title=build, then test).
type exprSlice []string

// exprSerial marks the whole list as urfave/cli copies it between a
// flag's names (Serialize, then Set): it replaces, where a value appends.
const exprSerial = "\x00exprs:"

func (s *exprSlice) Set(v string) error {
	if rest, ok := strings.CutPrefix(v, exprSerial); ok {
		return json.Unmarshal([]byte(rest), (*[]string)(s))
	}
	*s = append(*s, v)
	return nil
}

func (s *exprSlice) String() string {
	if s == nil {
		return ""
	}
	return strings.Join(*s, " ")
}

// Serialize is cli.Serializer: the list as Set takes it back whole.
func (s *exprSlice) Serialize() string {
	b, _ := json.Marshal([]string(*s))
	return exprSerial + string(b)
}

// exprFlag is a repeatable flag of whole values (exprSlice); exprs reads it.
func exprFlag(name string, aliases []string, usage string) cli.Flag {
	return exprGenericFlag{&cli.GenericFlag{Name: name, Aliases: aliases, Value: &exprSlice{}, Usage: usage}}
}

// exprGenericFlag is a GenericFlag that help shows as repeatable, as it
// shows a StringSliceFlag ([ --where EXPR ]).
type exprGenericFlag struct{ *cli.GenericFlag }

func (exprGenericFlag) IsSliceFlag() bool { return true }

// String is the help line: GenericFlag's own would describe the embedded
// flag, not this one.
func (f exprGenericFlag) String() string { return cli.FlagStringer(f) }

// exprs returns the values given to an exprFlag, in order.
func exprs(c *cli.Context, name string) []string {
	if v, ok := c.Generic(name).(*exprSlice); ok && v != nil {
		return *v
	}
	return nil
}
