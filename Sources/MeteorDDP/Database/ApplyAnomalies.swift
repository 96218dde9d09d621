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

    /// `nil` when nothing is logged at debug level (nothing is kept then).
    private var noted: [(Kind, DocumentKey)]?

    init(collecting: Bool) {
        noted = collecting ? [] : nil
    }

    mutating func note(_ kind: Kind, _ key: DocumentKey) {
        noted?.append((kind, key))
    }

    func log(to logger: Logger) {
        for (kind, key) in noted ?? [] { logger.debug("\(kind.rawValue)", metadata: ["key": "\(key)"]) }
    }
}
