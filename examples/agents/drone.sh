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
# Each tool runs in its JSON mode: its report (the last thing on stdout)
# gives the usage ledger the run's tokens and cost, and says whether the
# run succeeded. The exit status alone does not: Claude Code can end a
# failed run (an API error, the turn limit) with a result and status 0.
# The report goes to stdout as the tool prints it (live under spawn
# --tee) and to $out, read below.
out=$(mktemp)
trap 'rm -f "$out" "$out.status"' EXIT
run() { "$@" || echo $? >"$out.status"; }
case "$tool" in
  claude) run claude -p "$prompt" --permission-mode acceptEdits --output-format json | tee "$out" ;;
  codex) run codex exec --json --full-auto "$prompt" | tee "$out" ;;
  gemini) run gemini -p "$prompt" --yolo --output-format json | tee "$out" ;;
  aider) exec aider --message "$prompt" --yes-always --read AGENTS.md ;;
  *) echo "drone.sh: unknown tool $tool (claude, codex, gemini, aider)" >&2; exit 2 ;;
esac
status=$(cat "$out.status" 2>/dev/null || echo 0)
[ "$status" -eq 0 ] || exit "$status"
fail() { echo "drone.sh: $tool: $*" >&2; exit 1; }
case "$tool" in
  claude)
    # One compact result object: {"type":"result","subtype":"success",
    # "is_error":false,...}; anything else is a failed run.
    result=$(grep '"type": *"result"' "$out" | tail -n 1)
    [ -n "$result" ] || fail "no result object in its output"
    subtype=$(printf '%s\n' "$result" | sed -n 's/.*"subtype": *"\([^"]*\)".*/\1/p')
    [ "$subtype" = success ] || fail "the run ended with $subtype"
    printf '%s\n' "$result" | grep -q '"is_error": *false' || fail "the run ended in an error"
    ;;
  codex)
    # JSON lines; a turn.failed or error event is a failed run.
    if grep -q -e '"type": *"turn\.failed"' -e '"type": *"error"' "$out"; then
      fail "$(grep -e '"type": *"turn\.failed"' -e '"type": *"error"' "$out" | tail -n 1)"
    fi
    grep -q '"type": *"turn\.completed"' "$out" || fail "no completed turn in its output"
    ;;
  gemini)
    # One object, printed indented; a top-level "error" is a failed run.
    if grep -q '^  "error":' "$out"; then fail "the run ended in an error"; fi
    ;;
esac
exit 0
