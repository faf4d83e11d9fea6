#!/usr/bin/env bash
# docs/operators.md is generated from the operator registry; this fails when they differ.
#   tests/test_operators_doc.sh OCL_INFER_BINARY DOCS_FILE
set -euo pipefail
cli="$1" doc="$2"
if ! diff -u "$doc" <("$cli" --list-ops --markdown); then
  echo "docs/operators.md is out of date: run  build/ocl-infer --list-ops --markdown > docs/operators.md" >&2
  exit 1
fi
# The JSON form lists the same operators.
count=$("$cli" --list-ops --json | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
grep -q "^$count operators\.$" "$doc" || { echo "--list-ops --json has $count operators, the page says otherwise" >&2; exit 1; }
echo "docs/operators.md matches the registry ($count operators)"
