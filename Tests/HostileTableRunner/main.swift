import Foundation
import HostileTable

// The hostile-server table at full size (`.ci/run hostile` runs it from a release build): every row, printed as it
// runs, then each failure; exits 1 if a row failed. `HostileTableRunner quick` runs the quick sizes of the debug suite;
// row names after it (or alone) run only those rows (`HostileTableRunner pingFlood`), to profile one.
var arguments = Array(CommandLine.arguments.dropFirst())
let full = arguments.first != "quick"
if !full { arguments.removeFirst() }
let named = arguments.map { name in
    guard let row = HostileTable.Row(rawValue: name) else {
        print("unknown row \(name); rows: \(HostileTable.Row.allCases.map(\.rawValue).joined(separator: ", "))")
        exit(2)
    }
    return row
}
let rows = named.isEmpty ? HostileTable.Row.allCases : named
var failures: [String] = []
var failedRows = 0
for row in rows {
    let found: [String]
    do {
        found = try await row.run(full: full).failures
    } catch {
        found = ["\(row.rawValue): \(error)"]
    }
    if !found.isEmpty { failedRows += 1 }
    failures += found
}
for failure in failures { print("hostile-server table: FAILED: \(failure)") }
print("hostile-server table: \(rows.count - failedRows) of \(rows.count) rows passed")
exit(failures.isEmpty ? 0 : 1)
