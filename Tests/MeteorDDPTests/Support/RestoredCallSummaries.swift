@testable import MeteorDDP

extension ClientHarness {
    /// The restored calls' outcomes, in short: "succeeded", "failed <code>", "alreadyApplied <code>".
    var restoredOutcomeSummaries: [String] {
        client.restoredCalls.outcomes.map { outcome in
            switch outcome.result {
            case .succeeded: return "succeeded"
            case .failed(let error): return "failed \(Self.code(error))"
            case .alreadyApplied(let error): return "alreadyApplied \(Self.code(error))"
            }
        }
    }

    private static func code(_ error: MethodError) -> String {
        error.meteorError.map { "\($0.error)" } ?? "\(error.kind)"
    }
}
