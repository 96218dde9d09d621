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

    private static func code(_ error: any Error) -> String {
        if let error = error as? MeteorError { return "\(error.error)" }
        if let error = error as? MethodError { return "\(error.kind)" }
        return "\(error)"
    }
}

/// Outcomes compared in tests: values by EJSON equality, errors by what they say.
extension RestoredCallOutcome.Result: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.succeeded(let a), .succeeded(let b)): return a == b
        case (.failed(let a), .failed(let b)): return String(describing: a) == String(describing: b)
        case (.alreadyApplied(let a), .alreadyApplied(let b)): return a == b
        default: return false
        }
    }
}
