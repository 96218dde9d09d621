import EJSON
import Foundation
import MeteorDDP
import NIOHTTP1

/// What tests do to the server's connections and what they read of it.
extension DDPTestServer {
    /// Closes every open connection now, as Meteor's `connection.close()` does: the sessions end with them (a client
    /// reconnecting gets a new session), even one whose socket was closing already. Returns how many it closed.
    @discardableResult
    public func dropAllConnections() -> Int {
        let connections = state.withLockedValue { Array($0.connections.values) }
        for connection in connections { connection.close() }
        return connections.count
    }

    /// While `true`, new connections are closed as soon as they are accepted.
    public var refusesNewConnections: Bool {
        get { state.withLockedValue { $0.refusesNewConnections } }
        set { state.withLockedValue { $0.refusesNewConnections = newValue } }
    }

    /// While `false`, sessions ignore client pings (so a client's heartbeat times out).
    public var respondsToPings: Bool {
        get { state.withLockedValue { $0.respondsToPings } }
        set { state.withLockedValue { $0.respondsToPings = newValue } }
    }

    /// The number of open sessions (connections that completed the WebSocket upgrade).
    public var sessionCount: Int { state.withLockedValue { $0.connections.count } }

    /// How many TCP connections were accepted since the server was created.
    public var acceptedConnections: Int { state.withLockedValue { $0.acceptedConnections } }

    /// Every client message received so far, over all sessions, in arrival order.
    public var receivedMessages: [ClientMessage] { state.withLockedValue { $0.receivedMessages } }

    /// Publishes the "bench documents" workload: `publish("bench") ` with `count` documents in collection `bench`.
    public func publishBenchDocuments(count: Int) {
        perform {
            let bench = collection(BenchDocuments.collection)
            for i in 0..<count where bench.document(BenchDocuments.id(i)) == nil {
                _ = try? bench.insert(BenchDocuments.fields(i), id: BenchDocuments.id(i))
            }
        }
        publish("bench") { _ in [Cursor(collection: BenchDocuments.collection)] }
    }

    /// Sends a raw text frame to every open session (for testing how clients survive bad input).
    public func broadcastRawFrame(_ frame: String) {
        let connections = state.withLockedValue { Array($0.connections.values) }
        // Within a session, counted as everything it sends (a client that counts it can still resume).
        queue.async {
            for connection in connections {
                if let session = connection.session { session.sendRaw(frame) } else { connection.write(frame) }
            }
        }
    }

    /// Sends a message to every open session.
    public func broadcast(_ message: ServerMessage) {
        let connections = state.withLockedValue { Array($0.connections.values) }
        let frame = EJSON.stringify(message.ejsonValue)
        queue.async {
            for connection in connections {
                if let session = connection.session { session.send(message) } else { connection.write(frame) }
            }
        }
    }
}

extension DDPTestServer {
    /// The headers of every WebSocket upgrade request received so far, in arrival order (names as sent).
    public var upgradeRequestHeaders: [[(name: String, value: String)]] {
        state.withLockedValue { $0.upgradeRequestHeaders.map { $0.map { ($0.name, $0.value) } } }
    }

    /// Whether `headers` carry every one of `required` with its value (names compared without case).
    static func carries(_ required: [String: String], _ headers: HTTPHeaders) -> Bool {
        required.allSatisfy { name, value in headers[name].contains(value) }
    }
}
