/// Formats doubles as JavaScript's `Number.prototype.toString` does (which is what `JSON.stringify` writes):
/// the shortest digits that round-trip, plain notation from 1e-6 up to 1e21, exponent form (`1e+21`, `5e-324`)
/// outside it, and `-0` as `0`.
enum JSNumberFormatter {
    static func append(_ value: Double, to output: inout [UInt8]) {
        if value == 0 {
            output.append(UInt8(ascii: "0"))
            return
        }
        if value.rounded(.towardZero) == value, abs(value) < 9_007_199_254_740_992 {
            appendInteger(Int64(value), to: &output)
            return
        }
        let (digits, exponent) = shortestDigits(abs(value))
        if value < 0 { output.append(UInt8(ascii: "-")) }
        let k = digits.count
        let n = exponent // the value is 0.d1d2…dk × 10^n
        if k <= n && n <= 21 {
            output += digits
            output += [UInt8](repeating: UInt8(ascii: "0"), count: n - k)
        } else if 0 < n && n <= 21 {
            output += digits[0..<n]
            output.append(UInt8(ascii: "."))
            output += digits[n...]
        } else if -6 < n && n <= 0 {
            output += [UInt8(ascii: "0"), UInt8(ascii: ".")]
            output += [UInt8](repeating: UInt8(ascii: "0"), count: -n)
            output += digits
        } else {
            output.append(digits[0])
            if k > 1 {
                output.append(UInt8(ascii: "."))
                output += digits[1...]
            }
            output.append(UInt8(ascii: "e"))
            let e = n - 1
            output.append(e >= 0 ? UInt8(ascii: "+") : UInt8(ascii: "-"))
            appendInteger(Int64(abs(e)), to: &output)
        }
    }

    static func string(_ value: Double) -> String {
        var output: [UInt8] = []
        append(value, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    private static func appendInteger(_ value: Int64, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var buffer: [UInt8] = []
        repeat {
            buffer.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        output += buffer.reversed()
    }

    /// The shortest round-trip decimal digits of a positive finite double, and the exponent n such that the value is
    /// 0.d1d2…dk × 10^n. Swift's `description` already produces the shortest round-trip digits; this reads them back.
    private static func shortestDigits(_ value: Double) -> (digits: [UInt8], exponent: Int) {
        var digits: [UInt8] = []
        var pointPosition: Int?
        var exponent = 0
        var seenNonZero = false
        var leadingZerosAfterPoint = 0
        var text = value.description.utf8.makeIterator()
        var position = 0
        while let byte = text.next() {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if byte == UInt8(ascii: "0") && !seenNonZero {
                    if pointPosition != nil { leadingZerosAfterPoint += 1 }
                    continue
                }
                seenNonZero = true
                digits.append(byte)
                position += 1
            case UInt8(ascii: "."):
                pointPosition = position
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                var sign = 1
                var magnitude = 0
                while let next = text.next() {
                    if next == UInt8(ascii: "-") {
                        sign = -1
                    } else if next == UInt8(ascii: "+") {
                        continue
                    } else {
                        magnitude = magnitude * 10 + Int(next - UInt8(ascii: "0"))
                    }
                }
                exponent = sign * magnitude
            default:
                break
            }
        }
        while digits.count > 1, digits.last == UInt8(ascii: "0") { digits.removeLast() }
        // The integer part's length (digits before the point), or minus the zeros right after "0.".
        let n = pointPosition == 0 ? exponent - leadingZerosAfterPoint : (pointPosition ?? position) + exponent
        return (digits, n)
    }
}
