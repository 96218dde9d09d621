/// A version of the DDP protocol, as named in the `connect` and `failed` messages.
///
/// Meteor's client proposes `1` first and also supports `pre2` and `pre1`.
/// For example:
/// ```swift
/// let proposal = DDPVersion.supported.first! // .v1
/// ```
public struct DDPVersion: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The version string on the wire.
    public let rawValue: String

    /// Creates a version from its wire name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// DDP version `1`, the current one.
    public static let v1 = DDPVersion(rawValue: "1")
    /// DDP version `pre2`.
    public static let pre2 = DDPVersion(rawValue: "pre2")
    /// DDP version `pre1` (no heartbeats).
    public static let pre1 = DDPVersion(rawValue: "pre1")

    /// The versions Meteor's client supports, in order of preference (`DDPCommon.SUPPORTED_DDP_VERSIONS`).
    public static let supported: [DDPVersion] = [.v1, .pre2, .pre1]

    /// Whether heartbeats run on a connection of this version (every version but `pre1`).
    public var hasHeartbeats: Bool { self != .pre1 }

    public var description: String { rawValue }
}
