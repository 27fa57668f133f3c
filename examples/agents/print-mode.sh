#!/bin/sh
# Recipe: a pool of TOOL agents in print mode working a queue.
#   examples/agents/print-mode.sh claude|codex|gemini|aider [DIR]
# Creates (or reuses) a Tavern project in DIR (default: a new temp dir),
# installs TOOL's hooks, queues three items, and runs a pool of at most two
# drones until the queue is drained. Runs with the stand-in when TOOL is
# not installed.
set -e
tool=${1:?usage: print-mode.sh claude|codex|gemini|aider [DIR]}
here=$(cd "$(dirname "$0")" && pwd)
dir=${2:-$(mktemp -d)}
cd "$dir"
[ -d .tavern ] || tavern init >/dev/null
tavern setup "$tool" >/dev/null
tavern queue create docs >/dev/null 2>&1 || true
for t in "describe the lexer" "describe the parser" "describe the printer"; do
  tavern queue add docs --title "$t" --body - >/dev/null <<ITEM
Write a one-paragraph description: $t.
ITEM
done
tavern pool run "$tool-pool" --queue docs --max 2 --on-empty terminate --quiet -- "$here/drone.sh" "$tool"
echo "done items:"
tavern ls items --where state=done
ls out
