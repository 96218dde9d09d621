import Foundation

/// A problem of the offline store. None is fatal: the client goes on with what it has in memory.
public struct PersistenceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The file is not a database this library can read (corrupt, truncated, another format). It was moved to
        /// ``PersistenceError/movedTo`` and the client started with an empty store.
        case corruptFile
        /// The file was written by a newer version of this library (a schema it does not know). It was moved to
        /// ``PersistenceError/movedTo`` and the client started with an empty store.
        case newerSchema
        /// The file cannot be opened (permissions, a missing directory, another process's lock); nothing was moved.
        /// The client keeps everything in memory.
        case cannotOpen
        /// Reading the stored state failed (a row that does not decode); the client started with an empty cache.
        case readFailed
        /// Writing failed (a full disk, an I/O error); the client stopped persisting and goes on in memory.
        case writeFailed
    }

    public let kind: Kind
    /// The store's file, if it has one.
    public let path: String?
    /// Where an unusable file was moved.
    public let movedTo: String?
    /// The underlying error, as text.
    public let reason: String

    public init(_ kind: Kind, path: String?, movedTo: String? = nil, reason: String) {
        self.kind = kind
        self.path = path
        self.movedTo = movedTo
        self.reason = reason
    }

    public var description: String {
        let location = path.map { " (\($0))" } ?? ""
        switch kind {
        case .corruptFile: return "offline store unreadable\(location), moved to \(movedTo ?? "?"): \(reason)"
        case .newerSchema:
            return "offline store written by a newer version\(location), moved to \(movedTo ?? "?"): \(reason)"
        case .cannotOpen: return "offline store cannot be opened\(location); keeping everything in memory: \(reason)"
        case .readFailed: return "offline store could not be read\(location); starting with an empty cache: \(reason)"
        case .writeFailed:
            return "offline store write failed\(location); keeping everything in memory from now on: \(reason)"
        }
    }
}

/// What a ``DDPClient`` found in its store when it was created.
public struct RestoreReport: Sendable, Equatable {
    /// Documents restored into the cache.
    public var documents = 0
    /// Unanswered calls restored (they are sent when connected; see ``DDPClient/restoredCalls``).
    public var methods = 0
    /// Subscriptions that were active (the first connection waits for them; see ``Persistence/reconciliationDelay``).
    public var subscriptions = 0
    /// A problem opening or reading the store, if any (the client then starts empty, in memory if it cannot open).
    public var problem: PersistenceError?

    public init() {}
}
