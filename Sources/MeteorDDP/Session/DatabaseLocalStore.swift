import EJSON

/// The session's ``LocalStore`` over a ``Database`` and its ``DataUpdateBuffer``.
struct DatabaseLocalStore: LocalStore {
    let database: Database
    let buffer: DataUpdateBuffer

    func enqueue(_ update: DataUpdate) { buffer.enqueue(update) }
    func flush() { buffer.flush() }
    func performAfterFlush(_ block: @escaping @Sendable () -> Void) { buffer.performAfterFlush(block) }
    var isIdle: Bool { buffer.isIdle }
    func hold(resetting: Bool) { buffer.hold(resetting: resetting) }
    func release() { buffer.release() }

    func runStub<T>(_ body: () throws -> T) rethrows -> (value: T, originals: [(DocumentKey, EJSONObject?)]) {
        try database.performUpdatesRecordingOriginals(body)
    }
}
