#!/bin/sh
# A stand-in coder drone of the soak scenario (soak.sh), run by `tavern
# spawn` in the project directory. stdin: the item body, the file to edit.
# Environment: TAVERN (the binary), TAVERN_AGENT, TAVERN_ITEM,
# TAVERN_INSTANCE (from tavern spawn, when it sets one).
set -eu
T=${TAVERN:-tavern}
if [ -z "${TAVERN_INSTANCE:-}" ]; then
  # Until tavern spawn mints an instance per spawn (issue 13), do what it
  # will: a fresh id in the environment and in the agent document, so that
  # what a killed predecessor of the same name holds is told apart.
  TAVERN_INSTANCE=$TAVERN_AGENT-$$-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
  export TAVERN_INSTANCE
  "$T" set "agents/$TAVERN_AGENT" "instance=$TAVERN_INSTANCE" > /dev/null
fi
file=$(grep -m1 . || true)
[ -n "$file" ] || { echo "no file named in the item" >&2; exit 2; }

# Reserve the file (tied to this agent's life: a kill releases it).
out=$("$T" reserve "$file" --wait 5m --ttl 10m --reason "$TAVERN_ITEM")
rid=$(printf '%s\n' "$out" | cut -f1)
echo "$TAVERN_AGENT $TAVERN_ITEM" >> "$file"

# Commit through the one merge slot. Under it nobody else runs git in
# this tree, so git's lock files left by a drone killed mid-commit are
# stale.
h=$("$T" token acquire merge --wait 5m)
rm -f .git/index.lock .git/HEAD.lock .git/refs/heads/*.lock
start=$(date +%s%N)
git commit -q -m "soak: edit $file" -m "Tavern-Item: $TAVERN_ITEM
Tavern-Agent: $TAVERN_AGENT
Tavern-Instance: ${TAVERN_INSTANCE:-}
Tavern-Reservation: $rid
Tavern-Token: $h
Tavern-Start: $start" -- "$file"
echo "$(git rev-parse HEAD) $(date +%s%N)" >> .soak/commits
"$T" token release merge "$h" > /dev/null
"$T" unreserve --id "$rid" > /dev/null
echo "committed $file"
