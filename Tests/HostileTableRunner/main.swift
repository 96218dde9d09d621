import Foundation
import HostileTable

// The hostile-server table at full size (`.ci/run hostile` runs it from a release build): every row, printed as it
// runs, then each failure; exits 1 if a row failed. `HostileTableRunner quick` runs the quick sizes of the debug suite.
let full = CommandLine.arguments.dropFirst().first != "quick"
var failures: [String] = []
var failedRows = 0
for row in HostileTable.Row.allCases {
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
print(
    "hostile-server table: \(HostileTable.Row.allCases.count - failedRows) of "
        + "\(HostileTable.Row.allCases.count) rows passed"
)
exit(failures.isEmpty ? 0 : 1)
