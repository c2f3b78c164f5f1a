#!/usr/bin/env bash
# tests/validation/table.sh - docs/validation.md's table is what the suite
# prints now (run.sh --table): a changed model or row shows here until the
# page is regenerated:
#   IBFAB=build/tools/ibfab IBFAB_SRC=. bash tests/validation/table.sh --update
. "$IBFAB_SRC/tests/lib/e2e.sh"
doc="$IBFAB_SRC/docs/validation.md"
bash "$IBFAB_SRC/tests/validation/run.sh" --table >"$tmp/table.md" ||
	fail "a row that should pass does not, or a row that cannot pass yet now does"
awk '/^<!-- table: tests\/validation\/run.sh --table -->$/ { on = 1; next }
     /^<!-- end of table -->$/ { on = 0 } on' "$doc" >"$tmp/doc.md"
if [ "${1:-}" = --update ]; then
	awk -v t="$tmp/table.md" '/^<!-- table: tests\/validation\/run.sh --table -->$/ {
		print; while ((getline l < t) > 0) print l; skip = 1; next }
		/^<!-- end of table -->$/ { skip = 0 } !skip' "$doc" >"$tmp/new.md" && cp "$tmp/new.md" "$doc"
	echo "updated $doc"
elif ! cmp -s "$tmp/table.md" "$tmp/doc.md"; then
	fail "docs/validation.md's table differs from run.sh --table (regenerate: $0 --update)"
	diff "$tmp/doc.md" "$tmp/table.md" | head -20
fi
finish
