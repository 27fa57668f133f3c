#!/bin/sh
# The merge queue's check in the workflow demo: run in the worktree after
# the rebase, before the base moves. No conflict markers, every shell
# script parses.
set -eu
if git grep -n -e '^<<<<<<<' -e '^>>>>>>>' >/dev/null; then
  git grep -n -e '^<<<<<<<' -e '^>>>>>>>'
  echo "check: conflict markers left" >&2
  exit 1
fi
for f in $(git ls-files '*.sh'); do
  sh -n "$f"
done
echo "check: $(git ls-files | wc -l | tr -d ' ') files, no conflict markers, scripts parse"
