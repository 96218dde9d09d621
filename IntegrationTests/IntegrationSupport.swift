import DDPTestServer
import Foundation
import MeteorDDP
@_exported import MeteorDDPTesting
import NIOSSL
@_exported import TestSupport
import XCTest

extension DDPClient {
    /// Waits for the first status (current one included) that satisfies `predicate`; records every status seen.
    @discardableResult
    func waitForStatus(
        _ what: String,
        timeout: Double = 10,
        seen: StatusLog? = nil,
        from stream: ConnectionStatusUpdates? = nil,
        where predicate: @escaping @Sendable (ConnectionStatus) -> Bool
    ) async throws -> ConnectionStatus {
        // A stream taken earlier starts at the status current when it was taken: what happened since is not missed.
        let updates = stream ?? statusUpdates
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

/// The server's refusal `body` ends with (`nil` when it succeeds); any other error is rethrown. Waits 10 s at most.
func serverRefusal(_ body: @escaping @Sendable () async throws -> Void) async throws -> MeteorError? {
    do {
        try await withTimeout(10, "refusal") { try await body() }
        return nil
    } catch let error as MeteorError {
        return error
    }
}
