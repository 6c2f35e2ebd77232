#!/usr/bin/env bash
# docs/slots.md's slot table is the one `nanscope-run --list-slots --markdown` prints from the code:
# the test fails, showing the difference, when they differ (regenerate the table with that command).
# Usage: docs_slots_table_test.sh NANSCOPE_RUN SOURCE_DIR
set -uo pipefail
run=$1
doc=$2/docs/slots.md
generated=$("$run" --list-slots --markdown) || { echo "docs_slots_table_test: $run failed" >&2; exit 1; }
documented=$(sed -n '/^| # | name | phase |/,/^$/p' "$doc" | sed '/^$/d')
if [ "$generated" != "$documented" ]; then
  echo "docs_slots_table_test: docs/slots.md's table differs from '$run --list-slots --markdown':" >&2
  diff <(echo "$documented") <(echo "$generated") >&2
  exit 1
fi
echo "docs_slots_table_test: docs/slots.md's table is the code's ($(echo "$generated" | wc -l) lines)"
