import DDPCommandLine
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads lines from a terminal in raw mode with ``LineEditor`` (arrow keys, history, Ctrl-A/E/U/D), restoring the
/// terminal's mode afterwards.
final class Terminal: @unchecked Sendable {
    // @unchecked because after it is made, only the thread that reads standard input uses it.
    private var original = termios()
    private var editor = LineEditor()
    private var pending: [UInt8] = []

    init?() {
        guard isatty(STDIN_FILENO) != 0, tcgetattr(STDIN_FILENO, &original) == 0 else { return nil }
    }

    /// The next line (`nil` at end of input).
    func readLine(prompt: String) -> String? {
        var raw = original
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        defer { tcsetattr(STDIN_FILENO, TCSANOW, &original) }
        draw(prompt)
        var byte: UInt8 = 0
        while read(STDIN_FILENO, &byte, 1) == 1 {
            pending.append(byte)
            let (keys, rest) = LineEditor.Key.decode(pending)
            pending = rest
            for key in keys {
                switch editor.handle(key) {
                case .redraw: draw(prompt)
                case .line(let line):
                    write("\n")
                    return line
                case .endOfInput:
                    write("\n")
                    return nil
                }
            }
        }
        return nil
    }

    private func draw(_ prompt: String) {
        let back = editor.buffer.count - editor.cursor
        write("\r\u{1B}[K" + prompt + editor.line + (back > 0 ? "\u{1B}[\(back)D" : ""))
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
