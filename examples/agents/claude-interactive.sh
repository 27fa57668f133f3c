#!/bin/sh
# Recipe: Claude Code, interactive, with Tavern's hooks.
#   examples/agents/claude-interactive.sh [DIR]
# Sets up a project, queues an item, has "bob" reserve src/shared.md, and
# starts Claude Code (or its stand-in, which plays a scripted session:
# primed at start, takes the item, is refused the edit of bob's file,
# writes its own, stops, ends). What to look at afterwards is printed.
set -e
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$(mktemp -d)}
cd "$dir"
[ -d .tavern ] || tavern init >/dev/null
tavern setup claude
tavern queue create build >/dev/null 2>&1 || true
tavern queue add build --title "write out/ for the first item" >/dev/null
tavern agent new bob >/dev/null 2>&1 || true
tavern reserve src/shared.md --as bob --reason "bob is rewriting it" >/dev/null
if [ -n "${TAVERN_STAND_IN:-}" ] || ! command -v claude >/dev/null 2>&1; then
  PATH="$here/stand-in:$PATH"
fi
claude
echo "--- afterwards in $dir:"
tavern ls items
tavern log --type reservation.denied
for agent in $(ls .tavern/memory); do
  tavern memory ls --topic summary --as "$agent"
done
