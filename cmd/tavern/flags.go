package main

import "github.com/urfave/cli/v2"

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

// bodyFlag reads a document body from a file or stdin.
func bodyFlag() cli.Flag {
	return &cli.StringFlag{Name: "body", Usage: "read the markdown body from `FILE` (- for stdin)"}
}

// instanceFlag is the caller's agent instance: each `tavern spawn` of an
// agent is a new instance (TAVERN_INSTANCE in the child's environment).
// Token slots and reservations record it, and a release or unreserve by
// name from another instance of the same agent is fenced (exit 4).
func instanceFlag() cli.Flag {
	return &cli.StringFlag{Name: "instance", Usage: "act as agent instance `ID` (default $TAVERN_INSTANCE)", EnvVars: []string{"TAVERN_INSTANCE"}}
}

func attemptFlag() cli.Flag {
	return &cli.IntFlag{Name: "attempt", Usage: "the claim attempt `N` printed by take (fencing token; 0 = the current claim)"}
}
