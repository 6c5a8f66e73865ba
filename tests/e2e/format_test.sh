#!/usr/bin/env bash
# Every C++ file of the tree is formatted as .clang-format says (Google's
# style, 120 columns), by clang-format 14, which scripts/setup.sh installs.
# A file that is not fails the test with the command that formats it.
# Skipped (exit 77) where clang-format-14 is missing.
cd "${SOURCE_DIR:?}" || exit 1
format=$(command -v clang-format-14) || { echo "clang-format-14 is not installed (scripts/setup.sh installs it)"; exit 77; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find core plugins tools tests sdk bench examples python \( -name '*.cc' -o -name '*.h' \) -print)
fi
bad=()
for f in "${files[@]}"; do
  "$format" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -ne 0 ]; then
  echo "format: ${#bad[@]} file(s) not formatted as .clang-format says; run: clang-format-14 -i ${bad[*]}"
  exit 1
fi
echo "format: ${#files[@]} files formatted"
