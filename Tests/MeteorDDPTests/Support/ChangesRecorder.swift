import Foundation
import XCTest

@testable import MeteorDDP

/// Records every `databaseDidChange` notification of one database, and lets a test wait for a number of them.
final class ChangesRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [DatabaseChanges] = []
    private var observer: (any NSObjectProtocol)?
    private let database: Database

    /// Starts recording after every change already committed has been delivered.
    init(_ database: Database) {
        self.database = database
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        observer = NotificationCenter.default.addObserver(forName: .databaseDidChange, object: database, queue: nil) {
            [weak self] notification in
            guard let changes = notification.userInfo?[DatabaseChanges.userInfoKey] as? DatabaseChanges else { return }
            self?.lock.withLock { self?.recorded.append(changes) }
        }
    }

    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }

    /// ``changes`` that changed a document (not only the cache's metadata: pending writes, the offline store's data).
    var documentChanges: [DatabaseChanges] {
        changes.filter { $0.count > 0 }
    }

    /// Waits until every notification already committed has been delivered, then returns all recorded so far.
    var changes: [DatabaseChanges] {
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        return lock.withLock { recorded }
    }
}
