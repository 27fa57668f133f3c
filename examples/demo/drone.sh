#!/bin/sh
# A drone of the Tavern demo: one item in, one file out.
# stdin: the item body. Environment: TAVERN_AGENT, TAVERN_ITEM, TAVERN_ATTEMPT,
# TAVERN_RESULT (a file for the result), TAVERN_DIR (the .tavern directory).
set -e
phrase=$(cat)
echo "$TAVERN_AGENT took $TAVERN_ITEM (attempt $TAVERN_ATTEMPT): $phrase"
sleep 0.2
# Fail about one run in five so retries and dead letters show up.
r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
if [ $((r % 5)) -eq 0 ]; then
  echo "spilled the ale on $TAVERN_ITEM" >&2
  exit 1
fi
letters=$(printf '%s' "$phrase" | tr -cd '[:alpha:]' | wc -c | tr -d ' ')
mkdir -p out
printf '%s\t%s\n' "$letters" "$phrase" > "out/$TAVERN_ITEM.txt"
echo "$letters letters" > "$TAVERN_RESULT"
echo "counted $letters letters"
