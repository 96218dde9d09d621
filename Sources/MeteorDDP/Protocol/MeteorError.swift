import EJSON

/// An error as a Meteor server serialises it (a `Meteor.Error`): in `result`, `nosub` and login replies.
///
/// For example, `{"error":404,"reason":"Method 'foo' not found","message":"Method 'foo' not found [404]",
/// "errorType":"Meteor.Error","isClientSafe":true}` becomes
/// `MeteorError(error: .number(404), reason: "Method 'foo' not found", …)`.
public struct MeteorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Meteor's error code: a number (such as 403 or 404) or a string (such as `"invocation-failed"`).
    ///
    /// Compare it with a literal, as Meteor's JavaScript compares `e.error`: `error.error == 403`,
    /// `error.error == "not-authorized"`.
    public enum Code: Sendable, Hashable, CustomStringConvertible, ExpressibleByIntegerLiteral,
        ExpressibleByStringLiteral
    {
        /// A numeric code, such as HTTP-style 403.
        case number(Double)
        /// A string code, such as `"too-many-requests"`.
        case string(String)

        public init(integerLiteral value: Int) { self = .number(Double(value)) }

        public init(stringLiteral value: String) { self = .string(value) }

        public var description: String {
            switch self {
            case .number(let n):
                return n.rounded() == n && abs(n) < 1e15 ? String(Int64(n)) : String(n)
            case .string(let s):
                return s
            }
        }
    }

    /// The error code (`error`).
    public var error: Code
    /// The human-readable reason, if the server set one.
    public var reason: String?
    /// Extra details, if the server set them.
    public var details: EJSONValue?
    /// The server's composed message (`"<reason> [<error>]"`), if present.
    public var message: String?
    /// The server's `errorType` (normally `"Meteor.Error"`).
    public var errorType: String?

    /// Creates an error.
    public init(
        error: Code, reason: String? = nil, details: EJSONValue? = nil, message: String? = nil,
        errorType: String? = "Meteor.Error"
    ) {
        self.error = error
        self.reason = reason
        self.details = details
        self.message = message
        self.errorType = errorType
    }

    /// Reads an error object from the wire. Unknown shapes still give an error (code `"unknown"`), never a crash.
    public init(ejson value: EJSONValue) {
        let code: Code
        switch value["error"] {
        case .number(let n)?: code = .number(n)
        case .string(let s)?: code = .string(s)
        default: code = .string("unknown")
        }
        self.init(
            error: code,
            reason: value["reason"]?.stringValue,
            details: value["details"],
            message: value["message"]?.stringValue,
            errorType: value["errorType"]?.stringValue
        )
    }

    /// The error as a wire object, in the field order a Meteor server writes it.
    public var ejsonValue: EJSONValue {
        var object = EJSONObject()
        object["isClientSafe"] = true
        switch error {
        case .number(let n): object["error"] = .number(n)
        case .string(let s): object["error"] = .string(s)
        }
        if let reason { object["reason"] = .string(reason) }
        if let details { object["details"] = details }
        object["message"] = .string(message ?? (reason.map { "\($0) [\(error)]" } ?? "[\(error)]"))
        object["errorType"] = .string(errorType ?? "Meteor.Error")
        return .object(object)
    }

    public var description: String {
        if let reason { return "\(reason) [\(error)]" }
        return "[\(error)]"
    }
}

extension MeteorError {
    /// Whether the server's rate limiter refused the request (Meteor's DDPRateLimiter: `too-many-requests`).
    public var isRateLimited: Bool { error == "too-many-requests" }

    /// How long to wait before trying again, for a rate limiter's refusal (its `details.timeToReset`, in
    /// milliseconds); `nil` for any other error.
    ///
    /// For example:
    /// ```swift
    /// do {
    ///     _ = try await client.call("messages.send", params: ["hi"])
    /// } catch let error as MeteorError where error.isRateLimited {
    ///     print("slow down: try again in", error.retryAfter ?? .seconds(1))
    /// }
    /// ```
    public var retryAfter: Duration? {
        guard isRateLimited, case .number(let milliseconds)? = details?["timeToReset"], milliseconds.isFinite,
            milliseconds >= 0
        else { return nil }
        return .milliseconds(Int64(milliseconds.rounded(.up)))
    }
}
