import Logging

/// Updates the cache applied with Meteor's tolerance (logged at debug level, never fatal), noted while the open
/// transaction is accessed and logged after it (after the commit, unless the app holds an outer transaction): a log
/// handler is app code and may read the cache.
struct ApplyAnomalies {
    enum Kind: String {
        case addedExisting = "added for an existing document applied as a change"
        case changedMissing = "changed for a missing document applied as an add"
        case removedMissing = "removed for a missing document ignored"
    }

    private let logger: Logger
    /// `nil` when `logger` logs nothing at debug level (nothing is kept then).
    private var noted: [(Kind, DocumentKey)]?

    init(loggingTo logger: Logger) {
        self.logger = logger
        noted = logger.logLevel <= .debug ? [] : nil
    }

    mutating func note(_ kind: Kind, _ key: DocumentKey) {
        noted?.append((kind, key))
    }

    /// Logs what was noted (call once the transaction has committed).
    func log() {
        for (kind, key) in noted ?? [] { logger.debug("\(kind.rawValue)", metadata: ["key": "\(key)"]) }
    }
}
