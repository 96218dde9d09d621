import EJSON

/// Which user a login or a login-token request is for (Meteor's user selector).
///
/// A string literal is read as Meteor's client reads a string selector: an e-mail address when it contains `@`,
/// else a username.
public enum AccountSelector: Sendable, Hashable, ExpressibleByStringLiteral {
    /// The user with this e-mail address.
    case email(String)
    /// The user with this username.
    case username(String)
    /// The user with this id.
    case id(String)

    /// `"ada@example.com"` is an e-mail address, `"ada"` a username.
    public init(stringLiteral value: String) {
        self = value.contains("@") ? .email(value) : .username(value)
    }

    /// Whether it names nobody (an empty address, username or id).
    var isEmpty: Bool {
        switch self {
        case .email(let value), .username(let value), .id(let value): value.isEmpty
        }
    }

    /// The selector as the wire has it: `{email: …}`, `{username: …}` or `{id: …}`.
    public var ejsonValue: EJSONValue {
        switch self {
        case .email(let address): return ["email": .string(address)]
        case .username(let name): return ["username": .string(name)]
        case .id(let id): return ["id": .string(id)]
        }
    }
}
