import Foundation
import MeteorDDP

/// DDPRateLimiter's rules on the test server: at most `requests` calls of a method (or subscriptions to a
/// publication) per connection in each `interval`; the one over the limit is refused with Meteor's
/// `too-many-requests` error, `details: {timeToReset: ms}`. Confined to the server queue.
struct RateLimiter {
    enum Kind: String { case method, subscription }

    struct Rule {
        let kind: Kind
        let name: String
        let requests: Int
        let interval: TimeInterval
    }

    private struct Window {
        var start: Date
        var count: Int
    }

    var rules: [Rule] = []
    private var windows: [String: Window] = [:]

    /// Counts a request; the error to answer with when it is over its rule's limit.
    mutating func check(_ kind: Kind, name: String, connection: ObjectIdentifier, now: Date = Date()) -> MeteorError? {
        guard let rule = rules.last(where: { $0.kind == kind && $0.name == name }) else { return nil }
        let key = "\(kind.rawValue) \(name) \(connection.hashValue)"
        var window = windows[key] ?? Window(start: now, count: 0)
        if now.timeIntervalSince(window.start) >= rule.interval { window = Window(start: now, count: 0) }
        window.count += 1
        windows[key] = window
        guard window.count > rule.requests else { return nil }
        let timeToReset = max(0, rule.interval - now.timeIntervalSince(window.start)) * 1000
        return MeteorError(
            error: "too-many-requests",
            reason:
                "Error, too many requests. Please slow down. "
                + "You must wait \(Int((timeToReset / 1000).rounded(.up))) seconds before trying again.",
            details: ["timeToReset": .number(timeToReset.rounded())]
        )
    }
}

extension DDPTestServer {
    /// Limits a method (Meteor's `DDPRateLimiter.addRule({type: 'method', name}, requests, interval)`), per connection.
    public func limitMethod(_ name: String, requests: Int, per interval: Duration) {
        perform {
            rateLimiter.rules.append(
                RateLimiter.Rule(kind: .method, name: name, requests: requests, interval: Self.seconds(interval)))
        }
    }

    /// Limits subscriptions to a publication, per connection.
    public func limitSubscription(_ name: String, requests: Int, per interval: Duration) {
        perform {
            rateLimiter.rules.append(
                RateLimiter.Rule(kind: .subscription, name: name, requests: requests, interval: Self.seconds(interval)))
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
