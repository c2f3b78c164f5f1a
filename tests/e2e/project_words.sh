#!/bin/bash
# project_words.sh - the project's files speak of the project as it is, for
# its users and the next maintainer: no work diary (a session or an
# issue by number), no commit hashes given as where a figure came from, no
# machine the work was done on (a VM, an absolute path), and no file
# outside the repository (the design note is docs/architecture.md; facts
# cite their primary source: the IBA section, the paper, the man page).
# Git history keeps the diary.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
: "${IBFAB_SRC:?IBFAB_SRC must name the source tree}"
cd "$IBFAB_SRC" || exit 1
# (bracketed letters, so that this file does not match itself)
words='[s]essions? [0-9]|[i]ssues? [0-9]|\.\./[s]hared|[s]hared/reference|[D]ESIGN\.md|[t]his VM|/[w]ork/|[c]ommit [0-9a-f]{7}'
where=(README.md docs sim models topologies traces shim tools tests bench CMakeLists.txt .ci)
if grep -rEn --exclude-dir=corpus "$words" "${where[@]}" > "$tmp/hits"; then
	while IFS= read -r line; do
		fail "process words: ${line:0:200}"
	done < "$tmp/hits"
fi
# the check itself: a file with such a word is found
printf 'measured in s%s 9\n' ession > "$tmp/probe.md"
grep -qE "$words" "$tmp/probe.md" || fail "the pattern misses a session's number"
finish
