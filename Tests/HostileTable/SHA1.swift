import MeteorDDP

/// SHA-1 (FIPS 180-4), for the WebSocket handshake's `Sec-WebSocket-Accept` only: the hostile server writes its
/// handshake byte by byte, and a hash this small is not worth a second copy of BoringSSL in every build. Padding and
/// block loading are SHA-256's (the same in both).
enum SHA1 {
    static func digest(_ message: [UInt8]) -> [UInt8] {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (
            0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0
        )
        let padded = SHA256.padded(message)
        var w = [UInt32](repeating: 0, count: 80)
        for block in stride(from: 0, to: padded.count, by: 64) {
            SHA256.loadBlock(padded, at: block, into: &w)
            for t in 16..<80 {
                let x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]
                w[t] = x << 1 | x >> 31
            }
            var (a, b, c, d, e) = h
            for t in 0..<80 {
                let (f, k): (UInt32, UInt32) =
                    switch t {
                    case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                    case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                    case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                    default: (b ^ c ^ d, 0xCA62_C1D6)
                    }
                let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[t]
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, temp)
            }
            h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
        }
        return [h.0, h.1, h.2, h.3, h.4].flatMap { word in
            (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * $0)) }
        }
    }
}
