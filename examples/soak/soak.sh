#!/bin/sh
# The soak scenario of issue 15: a pool of coder drones on one git work
# tree. Each drone takes an item (a file to edit), reserves that file
# (tavern reserve --wait), edits it, takes the one-slot merge token (tavern
# token acquire --wait) and commits through the reservation guard (a
# pre-commit hook); meanwhile this script SIGKILLs random drones (and
# sometimes their spawn wrappers). At the end, check/ verifies that every
# commit was made under a live reservation of its paths and a held merge
# slot, that no two commits overlapped, and that every item is done.
#
# Usage: examples/soak/soak.sh [DIR]      (DIR: a fresh directory; default mktemp)
# Environment: TAVERN (the binary, default tavern on PATH), DRONES (4),
# ITEMS (40), FILES (6), KILLS (12), CHECK=skip to leave the check out.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
TAVERN=${TAVERN:-tavern}
DRONES=${DRONES:-4}
ITEMS=${ITEMS:-40}
FILES=${FILES:-6}
KILLS=${KILLS:-12}
export TAVERN
dir=${1:-}
[ -n "$dir" ] || dir=$(mktemp -d "${TMPDIR:-/tmp}/tavern-soak-XXXXXX")
mkdir -p "$dir"
cd "$dir"
rand() { r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' '); echo $((r % $1)); }

git init -q .
git config user.email soak@example.invalid
git config user.name soak
git config commit.gpgsign false
printf '.tavern/\n.soak/\n' > .gitignore
mkdir -p src .soak
i=1
while [ "$i" -le "$FILES" ]; do echo "file $i" > "src/f$i.txt"; i=$((i + 1)); done
git add -A
git commit -qm "soak: initial tree"

"$TAVERN" init > /dev/null
"$TAVERN" token init merge --count 1 > /dev/null
"$TAVERN" queue create code --max-attempts 25 --backoff 20ms --backoff-max 200ms > /dev/null
"$TAVERN" guard --install > /dev/null
i=1
while [ "$i" -le "$ITEMS" ]; do
  f=src/f$(( (i - 1) % FILES + 1 )).txt
  printf '%s\n' "$f" | "$TAVERN" queue add code --title "edit $f ($i)" --body - > /dev/null
  i=$((i + 1))
done

"$TAVERN" pool run coders --queue code --max "$DRONES" --on-empty terminate --quiet -- "$here/drone.sh" > .soak/pool.log 2>&1 &
pool=$!
kills=0
while [ "$kills" -lt "$KILLS" ] && kill -0 "$pool" 2> /dev/null; do
  sleep "0.$(( $(rand 5) + 2 ))"
  # The pool's children are spawn wrappers; a wrapper's child is the drone,
  # in its own process group with everything it started (tavern, git).
  drones=""
  for w in $(ps -o pid= --ppid "$pool"); do
    for d in $(ps -o pid= --ppid "$w"); do drones="$drones $w:$d"; done
  done
  # shellcheck disable=SC2086
  set -- $drones
  [ "$#" -gt 0 ] || continue
  shift "$(rand "$#")"
  w=${1%%:*}
  d=${1#*:}
  kill -s KILL -- "-$d" 2> /dev/null || continue
  if [ "$(rand 2)" -eq 0 ]; then kill -s KILL "$w" 2> /dev/null || true; fi
  kills=$((kills + 1))
done
status=0
wait "$pool" || status=$?
echo "$kills" > .soak/kills
echo "soak: $ITEMS items, $DRONES drones, $kills kills; pool exit $status; in $dir"
if [ "${CHECK:-}" != skip ]; then
  cd "$here/../.." && go run ./examples/soak/check "$dir"
fi
