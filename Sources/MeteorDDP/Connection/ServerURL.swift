import Foundation

/// A Meteor server's address as developers type it, made into the WebSocket URL DDP connects to, the way Meteor's
/// `DDP.connect` does (ddp-client's `toWebsocketUrl`):
///
/// | typed | connects to |
/// |---|---|
/// | `http://localhost:3000` | `ws://localhost:3000/websocket` |
/// | `https://app.example.com/` | `wss://app.example.com/websocket` |
/// | `https://example.com/app` | `wss://example.com/app/websocket` |
/// | `localhost:3000` | `ws://localhost:3000/websocket` |
/// | `ws://host:3000/websocket`, `wss://…` | as typed |
///
/// `ws` and `wss` URLs are taken as they are (Meteor would append `/websocket` to them too; this client has always
/// connected to a WebSocket URL as given, so a server at another path stays reachable).
public enum ServerURL {
    /// The WebSocket URL for `address`, or `nil` when it is not an address of either form (a relative path, a
    /// scheme other than `http`, `https`, `ws` or `wss`, or no host).
    public static func webSocketURL(_ address: String) -> URL? {
        let text = address.trimmingCharacters(in: .whitespaces)
        let translated: String
        if let separator = text.range(of: "://") {
            switch text[..<separator.lowerBound].lowercased() {
            case "ws", "wss": return hostedURL(text)
            case "http": translated = "ws" + text[separator.lowerBound...]
            case "https": translated = "wss" + text[separator.lowerBound...]
            default: return nil
            }
        } else {
            guard !text.isEmpty, !text.hasPrefix("/") else { return nil }
            translated = "ws://" + text
        }
        guard let url = hostedURL(translated) else { return nil }
        // The query and fragment, if any, are not part of the path Meteor appends to.
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.path ?? ""
        components?.path = path.hasSuffix("/") ? path + "websocket" : path + "/websocket"
        return components?.url
    }

    /// `text` as a URL with a host, or `nil`.
    private static func hostedURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let host = url.host, !host.isEmpty else { return nil }
        return url
    }

    /// `url` as ``webSocketURL(_:)`` translates it: `http(s)` URLs become `ws(s)://…/websocket`; anything else is
    /// returned as it is.
    static func translating(_ url: URL) -> URL {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return url }
        return webSocketURL(url.absoluteString) ?? url
    }
}
