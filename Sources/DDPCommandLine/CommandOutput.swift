import EJSON

/// What the `ddp` tool prints: one line per event, as text (coloured on a terminal) or as JSON (`--json`: one object
/// per line with an `event` field, for scripts).
public struct CommandOutput: Sendable {
    public enum Style: Sendable {
        case text(colour: Bool)
        case json
    }

    let style: Style
    let write: @Sendable (String) -> Void

    public init(style: Style, write: @escaping @Sendable (String) -> Void) {
        self.style = style
        self.write = write
    }

    /// Prints an event: `fields` for `--json`, `text` otherwise.
    func event(_ name: String, _ fields: EJSONObject = [:], text: String) {
        switch style {
        case .json:
            var object: EJSONObject = ["event": .string(name)]
            for (key, value) in fields { object[key] = value }
            write(EJSON.stringify(.object(object)))
        case .text:
            write(text)
        }
    }

    enum Colour: String {
        case red = "31"
        case green = "32"
        case yellow = "33"
        case cyan = "36"
        case dim = "2"
    }

    /// `text` coloured when printing to a terminal.
    func coloured(_ text: String, _ colour: Colour) -> String {
        guard case .text(colour: true) = style else { return text }
        return "\u{1B}[\(colour.rawValue)m\(text)\u{1B}[0m"
    }
}
