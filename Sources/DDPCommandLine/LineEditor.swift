/// The line editing of the `ddp` prompt on a terminal: cursor movement, deletion and a history recalled with the
/// arrow keys. A value type fed one key at a time (the terminal's raw bytes are decoded by ``Key/decode(_:)``), so it
/// is tested without a terminal.
public struct LineEditor: Sendable {
    /// A key press.
    public enum Key: Equatable, Sendable {
        case character(Character)
        case enter, backspace, delete, left, right, up, down, home, end, endOfInput, clearLine

        /// Decodes the keys in a run of bytes read from a terminal in raw mode (UTF-8 text, control keys and ANSI
        /// escape sequences); returns them and the bytes of an incomplete trailing sequence.
        public static func decode(_ bytes: [UInt8]) -> (keys: [Key], rest: [UInt8]) {
            var keys: [Key] = []
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case 0x0D, 0x0A:
                    keys.append(.enter)
                    index += 1
                case 0x7F, 0x08:
                    keys.append(.backspace)
                    index += 1
                case 0x04:
                    keys.append(.endOfInput)
                    index += 1
                case 0x01:
                    keys.append(.home)
                    index += 1
                case 0x05:
                    keys.append(.end)
                    index += 1
                case 0x15:
                    keys.append(.clearLine)
                    index += 1
                case 0x1B:
                    guard index + 2 < bytes.count else { return (keys, Array(bytes[index...])) }
                    guard bytes[index + 1] == UInt8(ascii: "[") || bytes[index + 1] == UInt8(ascii: "O") else {
                        index += 1
                        continue
                    }
                    switch bytes[index + 2] {
                    case UInt8(ascii: "A"):
                        keys.append(.up)
                        index += 3
                    case UInt8(ascii: "B"):
                        keys.append(.down)
                        index += 3
                    case UInt8(ascii: "C"):
                        keys.append(.right)
                        index += 3
                    case UInt8(ascii: "D"):
                        keys.append(.left)
                        index += 3
                    case UInt8(ascii: "H"):
                        keys.append(.home)
                        index += 3
                    case UInt8(ascii: "F"):
                        keys.append(.end)
                        index += 3
                    case UInt8(ascii: "3"):
                        guard index + 3 < bytes.count else { return (keys, Array(bytes[index...])) }
                        keys.append(.delete)
                        index += 4
                    default: index += 3
                    }
                case 0x00..<0x20: index += 1
                default:
                    // One UTF-8 scalar: its length from the lead byte.
                    let length = byte < 0xC0 ? 1 : byte < 0xE0 ? 2 : byte < 0xF0 ? 3 : 4
                    guard index + length <= bytes.count else { return (keys, Array(bytes[index...])) }
                    let text = String(decoding: bytes[index..<index + length], as: UTF8.self)
                    keys.append(contentsOf: text.map(Key.character))
                    index += length
                }
            }
            return (keys, [])
        }
    }

    /// What the caller does after a key.
    public enum Outcome: Equatable, Sendable {
        /// Redraw the line.
        case redraw
        /// The line is complete.
        case line(String)
        /// End of input on an empty line.
        case endOfInput
    }

    /// The line being edited.
    public private(set) var buffer: [Character] = []
    /// The cursor's position in ``buffer``.
    public private(set) var cursor = 0
    /// Entered lines, oldest first (at most `historyLimit`).
    public private(set) var history: [String] = []
    private var historyIndex: Int?
    private var draft: [Character] = []
    let historyLimit: Int

    public init(historyLimit: Int = 500) {
        self.historyLimit = historyLimit
    }

    public var line: String { String(buffer) }

    public mutating func handle(_ key: Key) -> Outcome {
        switch key {
        case .character(let character):
            buffer.insert(character, at: cursor)
            cursor += 1
        case .backspace:
            if cursor > 0 {
                buffer.remove(at: cursor - 1)
                cursor -= 1
            }
        case .delete:
            if cursor < buffer.count { buffer.remove(at: cursor) }
        case .left: cursor = max(0, cursor - 1)
        case .right: cursor = min(buffer.count, cursor + 1)
        case .home: cursor = 0
        case .end: cursor = buffer.count
        case .clearLine:
            buffer.removeAll()
            cursor = 0
        case .up:
            guard !history.isEmpty else { break }
            if historyIndex == nil { draft = buffer }
            let index = max(0, (historyIndex ?? history.count) - 1)
            historyIndex = index
            recall(Array(history[index]))
        case .down:
            guard let index = historyIndex else { break }
            if index + 1 < history.count {
                historyIndex = index + 1
                recall(Array(history[index + 1]))
            } else {
                historyIndex = nil
                recall(draft)
            }
        case .endOfInput:
            if buffer.isEmpty { return .endOfInput }
        case .enter:
            let entered = line
            if !entered.trimmingCharacters(in: .whitespaces).isEmpty, history.last != entered {
                history.append(entered)
                if history.count > historyLimit { history.removeFirst() }
            }
            buffer.removeAll()
            cursor = 0
            historyIndex = nil
            draft = []
            return .line(entered)
        }
        return .redraw
    }

    private mutating func recall(_ text: [Character]) {
        buffer = text
        cursor = text.count
    }
}
