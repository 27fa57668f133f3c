#!/bin/sh
# The drone of the print-mode recipes: `tavern pool run NAME --queue Q --
# examples/agents/drone.sh TOOL` runs one of these per item, under the spawn
# wrapper (item body on stdin; TAVERN_AGENT, TAVERN_ITEM, ... in the
# environment; the wrapper holds the agent's liveness lock and completes or
# fails the item by this script's exit status).
#
# The prompt is the agent's prime followed by the item. With the tool's
# hooks installed (tavern setup TOOL), its SessionStart hook primes it too,
# reservations are enforced on its edits and its stop waits for its
# commitments; the hooks see the wrapper holds the lock and leave the
# agent's state to it (one spawn is counted once).
#
# A tool that is not installed is replaced by its stand-in
# (examples/agents/stand-in/TOOL); TAVERN_STAND_IN=1 forces the stand-ins.
set -e
tool=$1
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${TAVERN_STAND_IN:-}" ] || ! command -v "$tool" >/dev/null 2>&1; then
  PATH="$here/stand-in:$PATH"
fi
item=$(cat)
prompt="$(tavern prime --as "$TAVERN_AGENT")

## Your item ($TAVERN_ITEM, attempt $TAVERN_ATTEMPT)
$item

Do it, write what you did to \$TAVERN_RESULT, and stop."
case "$tool" in
  claude) exec claude -p "$prompt" --permission-mode acceptEdits ;;
  codex) exec codex exec "$prompt" ;;
  gemini) exec gemini -p "$prompt" --yolo ;;
  aider) exec aider --message "$prompt" --yes-always --read AGENTS.md ;;
  *) echo "drone.sh: unknown tool $tool (claude, codex, gemini, aider)" >&2; exit 2 ;;
esac
