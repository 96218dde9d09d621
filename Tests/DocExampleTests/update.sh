#!/usr/bin/env bash
# Regenerates DocExamples.generated.swift from the documentation's examples (README, DocC articles, doc comments).
# The placeholder first: the test that writes the file must compile before the new examples do.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo '// Placeholder while DocExampleTests regenerates this file.' > Tests/DocExampleTests/DocExamples.generated.swift
UPDATE_DOC_EXAMPLES=1 swift test --filter "DocExampleTests\." > /dev/null 2>&1 || true
if swift build --build-tests 2>&1 | grep -E "DocExamples.generated.swift:[0-9]+:[0-9]+: error" | sort -u | grep .; then
    exit 1
fi
echo "every example compiles"
