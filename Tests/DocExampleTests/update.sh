#!/usr/bin/env bash
# Regenerates DocExamples.generated.swift from the documentation's examples (README, DocC articles, doc comments),
# then builds the tests: it fails (and lists them) when an example does not compile.
# The placeholder first: the test that writes the file must compile before the new examples do.
set -uo pipefail
cd "$(dirname "$0")/../.."
echo '// Placeholder while DocExampleTests regenerates this file.' > Tests/DocExampleTests/DocExamples.generated.swift
UPDATE_DOC_EXAMPLES=1 swift test --filter "DocExampleTests\." > /dev/null 2>&1
if ! output=$(swift build --build-tests 2>&1); then
    echo "$output" | grep -E "error:" | sort -u
    echo "the build failed: an example above does not compile"
    exit 1
fi
echo "every example compiles"
