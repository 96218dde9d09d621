import EJSON
import FuzzSupport
@_spi(Storage) import MeteorDDP

/// Any frame: it is either a valid server message, whose serialised form reads back to a message that serialises the
/// same (serialising fills in defaults such as an error's `message`, so the first form may differ), or a typed
/// `DDPProtocolViolation` (malformed JSON, wrong shape); never a trap. The packed decoding of `added`/`changed`
/// either declines the frame or reads exactly what the general parser reads, packed byte for byte the same. A frame
/// that does not parse keeps the waiters it names (a `result`'s id, an `updated`'s ids, …) for the client to fail.
@_cdecl("FuzzServerMessage_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(fuzzServerMessage)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzServerMessage(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let frame = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let difference = DocumentMessageDecoding.disagreement(frame) { fatalError(difference) }
    if let lost = DocumentMessageDecoding.lostWaiters(frame) { fatalError(lost) }
    guard let value = try? EJSON.parse(bytes: UnsafeBufferPointer(start: data, count: size)) else { return 0 }
    guard let message = try? ServerMessage(ejson: value) else { return 0 }
    let text = EJSON.stringify(message.ejsonValue)
    guard let again = try? ServerMessage(ejson: message.ejsonValue), EJSON.stringify(again.ejsonValue) == text else {
        fatalError("a server message does not read back: \(text)")
    }
    return 0
}
