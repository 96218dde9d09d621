/// Prints doubles exactly as JavaScript's `Number.prototype.toString` does.
///
/// The digits are the shortest that round-trip (Swift's `description` produces the same digits as
/// JavaScript); only the layout differs: integers print without `.0`, values at or above `1e21` and below
/// `1e-6` use exponent form with an explicit sign (`1e+21`, `1.5e-7`), and `-0` prints as `0`.
///
/// For example:
/// ```swift
/// var out: [UInt8] = []
/// JSNumberFormatter.append(1e21, to: &out)     // "1e+21"
/// JSNumberFormatter.append(0.000001, to: &out) // "0.000001"
/// JSNumberFormatter.append(1e20, to: &out)     // "100000000000000000000"
/// ```
enum JSNumberFormatter {
    /// Appends the JavaScript text of a finite `value` to `output`.
    static func append(_ value: Double, to output: inout [UInt8]) {
        if value == 0 {
            output.append(UInt8(ascii: "0"))
            return
        }
        if value.rounded(.towardZero) == value, abs(value) < 1e18 {
            appendInteger(Int64(value), to: &output)
            return
        }
        appendGeneral(value, to: &output)
    }

    /// Appends the JavaScript text of a finite `value` as a `String`.
    static func string(_ value: Double) -> String {
        var output: [UInt8] = []
        append(value, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    @inline(__always)
    static func appendInteger(_ value: Int64, to output: inout [UInt8]) {
        var magnitude = value.magnitude
        if value < 0 { output.append(UInt8(ascii: "-")) }
        if magnitude < 10 {
            output.append(UInt8(ascii: "0") + UInt8(magnitude))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var position = 20
            while magnitude > 0 {
                position -= 1
                buffer[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[position..<20]))
        }
    }

    /// Lays out the shortest round-trip digits of `value` per ECMAScript's Number::toString.
    private static func appendGeneral(_ value: Double, to output: inout [UInt8]) {
        // Swift's description: [-]digits[.digits][e(+|-)digits], with shortest round-trip digits.
        let text = value.magnitude.description
        var digits: [UInt8] = []
        var integerDigits = 0
        var exponent = 0
        var seenPoint = false
        var parsingExponent = false
        var exponentNegative = false
        for byte in text.utf8 {
            if parsingExponent {
                if byte == UInt8(ascii: "-") { exponentNegative = true } else if byte != UInt8(ascii: "+") {
                    exponent = exponent * 10 + Int(byte - UInt8(ascii: "0"))
                }
            } else if byte == UInt8(ascii: ".") {
                seenPoint = true
            } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                parsingExponent = true
            } else {
                digits.append(byte)
                if !seenPoint { integerDigits += 1 }
            }
        }
        if exponentNegative { exponent = -exponent }
        // value = 0.d1d2…dk × 10^n
        var leadingZeros = 0
        while leadingZeros < digits.count - 1, digits[leadingZeros] == UInt8(ascii: "0") { leadingZeros += 1 }
        digits.removeFirst(leadingZeros)
        while digits.count > 1, digits.last == UInt8(ascii: "0") { digits.removeLast() }
        let n = integerDigits + exponent - leadingZeros
        let k = digits.count

        if value < 0 { output.append(UInt8(ascii: "-")) }
        if k <= n && n <= 21 {
            output.append(contentsOf: digits)
            output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: n - k))
        } else if 0 < n && n <= 21 {
            output.append(contentsOf: digits[0..<n])
            output.append(UInt8(ascii: "."))
            output.append(contentsOf: digits[n...])
        } else if -6 < n && n <= 0 {
            output.append(UInt8(ascii: "0"))
            output.append(UInt8(ascii: "."))
            output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: -n))
            output.append(contentsOf: digits)
        } else {
            output.append(digits[0])
            if k > 1 {
                output.append(UInt8(ascii: "."))
                output.append(contentsOf: digits[1...])
            }
            output.append(UInt8(ascii: "e"))
            output.append(n - 1 < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            appendInteger(Int64(abs(n - 1)), to: &output)
        }
    }
}
