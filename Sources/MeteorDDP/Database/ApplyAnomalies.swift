import Logging

/// Updates the cache applied with Meteor's tolerance (logged at debug level, never fatal), noted while the open
/// transaction is accessed and logged after it (after the commit, unless the app holds an outer transaction): a log
/// handler is app code and may read the cache.
///
/// Bounded whatever the server sends: a transaction keeps a count and the first document per kind, and logs one line
/// per kind (with the count); a client's database also passes its lines through the client's ``LogThrottle`` (one a
/// second per kind, then a summary), so a flood of `removed` for missing documents is not a line per frame.
struct ApplyAnomalies {
    enum Kind: String, CaseIterable {
        case addedExisting = "added for an existing document applied as a change"
        case changedMissing = "changed for a missing document applied as an add"
        case removedMissing = "removed for a missing document ignored"

        var throttleKind: LogThrottle.Kind {
            switch self {
            case .addedExisting: LogThrottle.Kind(first: "anomaly", second: "added")
            case .changedMissing: LogThrottle.Kind(first: "anomaly", second: "changed")
            case .removedMissing: LogThrottle.Kind(first: "anomaly", second: "removed")
            }
        }
    }

    private let logger: Logger
    private let throttle: LogThrottle?
    /// Per kind (in `Kind.allCases` order): how many, and the first document. `nil` when `logger` logs nothing at
    /// debug level (nothing is kept then).
    private var noted: [(count: Int, first: DocumentKey?)]?

    init(loggingTo logger: Logger, throttle: LogThrottle? = nil) {
        self.logger = logger
        self.throttle = throttle
        noted = logger.logLevel <= .debug ? Array(repeating: (0, nil), count: Kind.allCases.count) : nil
    }

    mutating func note(_ kind: Kind, _ key: DocumentKey) {
        guard noted != nil else { return }
        let index = Kind.allCases.firstIndex(of: kind)!
        noted![index].count += 1
        if noted![index].first == nil { noted![index].first = key }
    }

    /// Logs what was noted (call once the transaction has committed): a line per kind.
    func log() {
        guard let noted else { return }
        for (kind, (count, first)) in zip(Kind.allCases, noted) where count > 0 {
            if let throttle, !throttle.admit(kind.throttleKind, budget: LogThrottle.violationsPerSecond, level: .debug)
            {
                continue
            }
            var metadata: Logger.Metadata = ["key": "\(first!)"]
            if count > 1 { metadata["documents"] = "\(count)" }
            logger.debug("\(kind.rawValue)", metadata: metadata)
        }
    }
}
