#!/bin/sh
# A stand-in coding agent of the workflow demo (`tavern demo workflow`).
#
# It runs in its item's own git worktree ($TAVERN_WORKTREE, on branch
# $TAVERN_BRANCH made from $TAVERN_BASE), reads what to change from the item
# body on stdin ("file: PATH" and "text: LINE"), commits, writes its result
# to $TAVERN_RESULT, and ends with a line shaped like the result object of
# `claude -p --output-format json`, so the usage ledger has tokens and cost
# to count. A real agent would be e.g.:
#   claude -p "$(cat)" --output-format json --permission-mode acceptEdits
set -eu
body=$(cat)
field() { printf '%s\n' "$body" | sed -n "s/^$1: //p" | head -n 1; }
file=$(field file)
text=$(field text)
meet=$(field meet)
title=$(sed -n 's/^title: //p' "$TAVERN_ITEM_PATH" | head -n 1)
export GIT_AUTHOR_NAME="$TAVERN_AGENT" GIT_AUTHOR_EMAIL="$TAVERN_AGENT@tavern.demo"
export GIT_COMMITTER_NAME="$TAVERN_AGENT" GIT_COMMITTER_EMAIL="$TAVERN_AGENT@tavern.demo"
echo "$TAVERN_AGENT: $title (attempt $TAVERN_ATTEMPT) on $TAVERN_BRANCH"

if [ -n "$(git log --oneline "$TAVERN_BASE..HEAD")" ]; then
  # An earlier attempt committed the work; it failed to merge. The fix:
  # rebase onto the base now, keeping both sides of a conflict.
  if git rebase "$TAVERN_BASE" >/dev/null 2>&1; then
    echo "rebased onto $TAVERN_BASE cleanly"
  else
    for f in $(git diff --name-only --diff-filter=U); do
      grep -v -e '^<<<<<<<' -e '^=======' -e '^>>>>>>>' "$f" > "$f.resolved"
      mv "$f.resolved" "$f"
      git add "$f"
      echo "resolved the conflict in $f by keeping both lines"
    done
    GIT_EDITOR=true git rebase --continue >/dev/null
  fi
  echo "fixed: $title" > "$TAVERN_RESULT"
else
  if [ -n "$meet" ]; then
    # The demo's deliberate conflict: the tasks that "meet" start from the
    # same base, so the second to merge conflicts with the first.
    mkdir -p "$TAVERN_REPO/.demo/meet"
    touch "$TAVERN_REPO/.demo/meet/$meet.$TAVERN_ITEM"
    i=0
    while [ "$(ls "$TAVERN_REPO/.demo/meet" | grep -c "^$meet\.")" -lt 2 ] && [ $i -lt 300 ]; do
      sleep 0.1; i=$((i + 1))
    done
  fi
  mkdir -p "$(dirname "$file")"
  printf '%s\n' "$text" > "$file"
  git add -A
  git commit -q -m "$title"
  echo "wrote $file"
  echo "$title: wrote $file" > "$TAVERN_RESULT"
fi
# The usage report, as Claude Code prints it (made-up numbers).
n=$(printf '%s' "$body" | wc -c | tr -d ' ')
printf '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"demo-%s","total_cost_usd":0.00%04d,"usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d}}\n' \
  "$TAVERN_ITEM" "$((n * 7))" "$((n * 12))" "$((n * 40))" "$((n * 3))"
