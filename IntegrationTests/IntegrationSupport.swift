import DDPTestServer
import Foundation
import MeteorDDP
import NIOSSL
import XCTest

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body` and fails with ``TimedOut`` if it has not finished within `seconds`. On a timeout the body's task is
/// cancelled and not waited for, so a hang that ignores cancellation still fails its test instead of stalling the suite.
@discardableResult
func withTimeout<T: Sendable>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let pending = Locked<CheckedContinuation<T, any Error>?>(nil)
    let finish: @Sendable (Result<T, any Error>) -> Void = { result in
        var continuation: CheckedContinuation<T, any Error>?
        pending.mutate { stored in
            continuation = stored
            stored = nil
        }
        continuation?.resume(with: result)
    }
    let work = Locked<Task<Void, Never>?>(nil)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            pending.mutate { $0 = continuation }
            let task = Task {
                do { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            work.mutate { $0 = task }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                task.cancel()
                finish(.failure(TimedOut(what: what)))
            }
        }
    } onCancel: {
        work.value?.cancel()
    }
}

extension DDPClient {
    /// Waits for the first status (current one included) that satisfies `predicate`; records every status seen.
    @discardableResult
    func waitForStatus(
        _ what: String,
        timeout: Double = 10,
        seen: StatusLog? = nil,
        where predicate: @escaping @Sendable (ConnectionStatus) -> Bool
    ) async throws -> ConnectionStatus {
        let updates = statusUpdates
        return try await withTimeout(timeout, what) {
            for await status in updates {
                seen?.append(status)
                if predicate(status) { return status }
            }
            throw TimedOut(what: what + " (stream ended)")
        }
    }

    func waitUntilConnected(timeout: Double = 10) async throws {
        try await waitForStatus("connected", timeout: timeout) { $0.isConnected }
    }
}

/// A value shared between a test and the threads it observes, protected by a lock.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked because `stored` is protected by `lock`.
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value { lock.withLock { stored } }

    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}

/// The statuses seen, for asserting transitions.
typealias StatusLog = Locked<[ConnectionStatus]>

extension Locked where Value == [ConnectionStatus] {
    convenience init() { self.init([]) }
    func append(_ status: ConnectionStatus) { mutate { $0.append(status) } }
    var states: [ConnectionStatus.State] { value.map(\.state) }
}

enum TestTLS {
    static func url(_ name: String) -> URL {
        Bundle.module.url(forResource: name, withExtension: "pem", subdirectory: "Fixtures")!
    }

    static func certificate() throws -> NIOSSLCertificate {
        try NIOSSLCertificate.fromPEMFile(url("test-server.cert").path)[0]
    }

    static func serverConfiguration() throws -> TLSConfiguration {
        TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try certificate())],
            privateKey: .privateKey(try NIOSSLPrivateKey(file: url("test-server.key").path, format: .pem))
        )
    }
}
