import Foundation

/// One consistent snapshot of a live client (``DDPClient/diagnostics()``), for a debug screen, a log line or
/// `ddp stats`: taken on the client queue in one go, `Codable` to JSON.
///
/// Parameters of subscriptions and calls are never in it (they may carry secrets): only their names and counts.
public struct ClientDiagnostics: Sendable, Codable, Equatable {
    /// When it was taken.
    public var takenAt: Date
    /// The connection and its session.
    public var connection: Connection
    /// The last errors published on ``DDPClient/errors`` (at most ``recentErrorLimit``), oldest first.
    public var recentErrors: [RecordedError]
    /// The subscriptions the client holds, in the order they were made.
    public var subscriptions: [SubscriptionInfo]
    /// The calls made and not completed, oldest first.
    public var pendingCalls: [PendingCall]
    /// Every collection in the cache, by name, with its documents.
    public var collections: [CollectionInfo]
    /// What waits inside the client.
    public var queues: Queues
    /// Call → `updated` (the optimistic update confirmed) over the last ``latencyWindow`` calls; `nil` before one.
    public var optimisticUpdateLatency: Latency?

    /// How many errors ``recentErrors`` keeps.
    public static let recentErrorLimit = 16
    /// How many calls ``optimisticUpdateLatency`` is computed over.
    public static let latencyWindow = 256

    public struct Connection: Sendable, Codable, Equatable {
        /// ``ConnectionStatus/State``'s name (`connected`, `connecting`, `waiting`, `offline`, `failed`).
        public var state: String
        /// The session id the server gave (kept while reconnecting: the session the client may resume).
        public var sessionID: String?
        /// How the current session began (``ConnectionStatus/SessionStart``'s name), while connected.
        public var sessionStart: String?
        /// The DDP version agreed with the server, while connected.
        public var version: String?
        /// Reconnect attempts since the last successful connection.
        public var retryCount: Int
        /// The WebSocket extension compressing the frames (`permessage-deflate`) while connected, if the server
        /// accepted it; `nil` otherwise (or when the transport does not say).
        public var compression: String? = nil
        /// Frame payload bytes the connection read off the wire (before inflating) and wrote to it (after deflating),
        /// while connected, when the transport counts them.
        public var wireBytesReceived: Int? = nil
        public var wireBytesSent: Int? = nil
    }

    public struct RecordedError: Sendable, Codable, Equatable {
        public var at: Date
        /// ``DDPError/Code``'s name.
        public var code: String
        public var message: String
    }

    public struct SubscriptionInfo: Sendable, Codable, Equatable {
        public var id: String
        public var name: String
        /// How many parameters it was made with (their values are not shown: they may hold secrets).
        public var parameterCount: Int
        /// `pending`, `ready`, `failed` or `stopped`.
        public var status: String
        /// How many handles use it; 0 while it waits out its `notInUseTimeout` before its `unsub`.
        public var handles: Int
        /// From `subscribe` to `ready`, if it became ready since this client made it.
        public var millisecondsToReady: Double?
    }

    public struct PendingCall: Sendable, Codable, Equatable {
        public var id: String
        public var name: String
        /// Since the call was made (restored calls: since the client started).
        public var ageMilliseconds: Double
        /// `queued` (its stub ran; not sent yet: offline, or behind a `wait` call), `sent`, `result` (its result
        /// came, not its `updated`), `updated` (its `updated` came, not its result), `completing` (both came: its data
        /// is being applied).
        public var phase: String
        /// Whether the call is kept in the offline store (it survives a restart).
        public var storedOffline: Bool
    }

    public struct CollectionInfo: Sendable, Codable, Equatable {
        public var name: String
        public var documents: Int
    }

    public struct Queues: Sendable, Codable, Equatable {
        /// Server messages held until quiescence (after a reconnect, or while a `wait` call runs).
        public var heldForQuiescence: Int
        /// Calls made and not completed.
        public var pendingCalls: Int
        /// Calls the offline store keeps (0 without ``DDPClient/Configuration/persistence``).
        public var storedOffline: Int = 0
        /// Document changes committed to the cache and not yet written to the offline store (its write-behind).
        public var changesWaitingForDisk: Int = 0
    }

    public struct Latency: Sendable, Codable, Equatable {
        public var p50Milliseconds: Double
        public var p95Milliseconds: Double
        /// How many calls the percentiles are taken over.
        public var samples: Int
    }
}
