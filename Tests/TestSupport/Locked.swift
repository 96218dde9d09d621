import Foundation

/// A value shared between a test and the threads it observes, protected by a lock.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked because `stored` is protected by `lock`.
    private let lock = NSLock()
    private var stored: Value

    public init(_ value: Value) {
        stored = value
    }

    public var value: Value { lock.withLock { stored } }

    public func mutate(_ body: (inout Value) -> Void) {
        lock.withLock { body(&stored) }
    }

    /// Runs `body` on the value under the lock and returns what it returns.
    public func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.withLock { body(&stored) }
    }
}
