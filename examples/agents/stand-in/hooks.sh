# Shared by the stand-ins: build a hook payload, run `tavern hook`, and
# show what the tool would do with the answer. Sourced; uses $tool,
# $session and $cwd.

new_session() {
  cat /proc/sys/kernel/random/uuid 2>/dev/null || date +%s%N
}

json_str() { # a JSON string literal of $1 (sh only: escape \ " and newlines)
  printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | awk 'BEGIN{ORS=""} NR>1{print "\\n"} {print}' | sed 's/^/"/; s/$/"/'
}

event_name() { # Tavern's event name -> the tool's
  case "$tool:$1" in
    gemini:pre-tool-use) echo BeforeTool ;;
    gemini:post-tool-use) echo AfterTool ;;
    gemini:user-prompt-submit) echo BeforeAgent ;;
    gemini:stop) echo AfterAgent ;;
    *) echo "$2" ;;
  esac
}

# fire EVENT NATIVE-NAME EXTRA-JSON: run the hook, print its answer.
fire() {
  name=$(event_name "$1" "$2")
  payload="{\"session_id\":\"$session\",\"transcript_path\":\"/tmp/$tool-$session.jsonl\",\"cwd\":\"$cwd\",\"hook_event_name\":\"$name\"$3}"
  answer=$(printf '%s' "$payload" | tavern hook "$1" --tool "$tool")
  if [ -n "$answer" ]; then
    printf '[%s stand-in] %s -> %s\n' "$tool" "$name" "$answer" >&2
  fi
  last_answer=$answer
}

denied() { case "$last_answer" in *'"deny"'*) return 0 ;; esac; return 1; }

# edit FILE TEXT: the write, behind the pre-tool-use gate, as the tool's
# file-writing tool would do it.
edit() {
  abs="$cwd/$1"
  case "$tool" in
    claude) fire pre-tool-use PreToolUse ",\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$abs\",\"content\":$(json_str "$2")},\"tool_use_id\":\"toolu_stand_in\"" ;;
    codex) fire pre-tool-use PreToolUse ",\"tool_name\":\"apply_patch\",\"tool_input\":{\"command\":$(json_str "*** Begin Patch
*** Add File: $1
+$2
*** End Patch")},\"tool_use_id\":\"call_stand_in\",\"model\":\"stand-in\",\"permission_mode\":\"default\"" ;;
    gemini) fire pre-tool-use BeforeTool ",\"tool_name\":\"write_file\",\"tool_input\":{\"file_path\":\"$abs\",\"content\":$(json_str "$2")}" ;;
  esac
  if denied; then
    echo "[$tool stand-in] not writing $1: the hook denied it" >&2
    return 1
  fi
  mkdir -p "$(dirname "$abs")"
  printf '%s\n' "$2" > "$abs"
  fire post-tool-use PostToolUse ",\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$abs\"},\"tool_response\":{\"success\":true},\"tool_use_id\":\"toolu_stand_in\""
}

# work_on_item: what the model would do with the item it holds (under
# tavern spawn) or takes (interactive): write out/<item>.md, and try
# src/shared.md too, which the recipes have another agent reserve.
work_on_item() {
  agent=${TAVERN_AGENT:-}
  item=${TAVERN_ITEM:-}
  if [ -z "$item" ]; then
    # An interactive session: its shell commands run as the agent the
    # session-start hook named (Claude Code: the exports it wrote to
    # $CLAUDE_ENV_FILE; the others: tool-<session id prefix>).
    if [ -n "${CLAUDE_ENV_FILE:-}" ] && [ -s "$CLAUDE_ENV_FILE" ]; then
      . "$CLAUDE_ENV_FILE"
      agent=$TAVERN_AGENT
    else
      agent="$tool-$(printf '%s' "$session" | tr -cd 'a-z0-9' | cut -c1-8)"
    fi
    line=$(TAVERN_AGENT=$agent tavern next --take | head -1) || { echo "[$tool stand-in] nothing to do" >&2; return 0; }
    item=${line% *}
    attempt=${line#* }
  fi
  edit src/shared.md "touched by $agent" || true
  edit "out/$item.md" "done by $agent" || return 1
  if [ -n "${attempt:-}" ]; then
    TAVERN_AGENT=$agent tavern item done "$item" --attempt "$attempt" >/dev/null
  fi
  echo "$agent wrote out/$item.md"
}
