import Foundation

/// RFC 6238 time-based one-time codes as accounts-2fa's server checks them (node-2fa: HMAC-SHA-1, 6 digits, 30 s
/// steps, a base32 secret, codes accepted within 10 steps either side), so the test server can play an authenticator
/// app and check codes with a clock of the test's choosing.
///
/// SHA-1 is written here (RFC 3174) rather than taken from swift-crypto, as the library's SHA-256 is: on Linux
/// swift-crypto builds a second BoringSSL, and the test server needs this one function. Checked against RFC 6238's
/// own test vectors (TOTPTests).
public enum TOTP {
    /// The 6-digit code of `secret` (base32) at `date`.
    public static func code(secret: String, at date: Date) -> String? {
        guard let key = base32Decode(secret) else { return nil }
        return code(key: key, counter: UInt64(max(0, date.timeIntervalSince1970) / 30))
    }

    /// Whether `code` is `secret`'s code within 10 steps of `date` (node-2fa's `verifyToken(secret, code, 10)`).
    static func isValid(_ code: String, secret: String, at date: Date, window: Int = 10) -> Bool {
        guard let key = base32Decode(secret), code.count == 6 else { return false }
        let counter = Int64(max(0, date.timeIntervalSince1970) / 30)
        return (-Int64(window)...Int64(window)).contains { delta in
            counter + delta >= 0 && Self.code(key: key, counter: UInt64(counter + delta)) == code
        }
    }

    /// RFC 4226's HOTP, 6 digits.
    static func code(key: [UInt8], counter: UInt64, digits: Int = 6) -> String {
        let message = (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * $0)) }
        let mac = hmacSHA1(key: key, message: message)
        let offset = Int(mac[19] & 0x0f)
        let binary =
            (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// A new random secret: 20 bytes as 32 base32 characters (what node-2fa's generateSecret gives).
    static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return base32Encode((0..<20).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    static func base32Encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    static func base32Decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for character in text.uppercased().utf8 where character != UInt8(ascii: "=") && character != UInt8(ascii: " ") {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
                bits -= 8
            }
        }
        return output
    }

    static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var key = key.count > 64 ? sha1(key) : key
        key += [UInt8](repeating: 0, count: 64 - key.count)
        let inner = sha1(key.map { $0 ^ 0x36 } + message)
        return sha1(key.map { $0 ^ 0x5c } + inner)
    }

    /// SHA-1 (RFC 3174).
    static func sha1(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var padded = message
        padded.append(0x80)
        while padded.count % 64 != 56 { padded.append(0) }
        let length = UInt64(message.count) * 8
        for shift in stride(from: 56, through: 0, by: -8) {
            padded.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
        }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: padded.count, by: 64) {
            for i in 0..<16 {
                w[i] =
                    (UInt32(padded[chunk + 4 * i]) << 24) | (UInt32(padded[chunk + 4 * i + 1]) << 16)
                    | (UInt32(padded[chunk + 4 * i + 2]) << 8) | UInt32(padded[chunk + 4 * i + 3])
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w[i] = (x << 1) | (x >> 31)
            }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32)
                switch i {
                case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
                }
                let temp = ((a << 5) | (a >> 27)) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, (b << 30) | (b >> 2), a, temp)
            }
            h[0] = h[0] &+ a
            h[1] = h[1] &+ b
            h[2] = h[2] &+ c
            h[3] = h[3] &+ d
            h[4] = h[4] &+ e
        }
        return h.flatMap { value in (0..<4).map { UInt8(truncatingIfNeeded: value >> UInt32(24 - 8 * $0)) } }
    }
}
