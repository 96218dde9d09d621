import EJSON
import FuzzSupport
import MeteorDDPTesting

@_spi(Testing) @testable import MeteorDDP

/// Any sequence of server frames (one per input line) driven into a connected client over the in-memory transport:
/// no trap, and the client still handles a well-formed exchange afterwards (a `ping` is answered with a `pong`).
@_cdecl("FuzzClientSession_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(fuzzClientSession)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzClientSession(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let transport = InMemoryTransport()
    var configuration = DDPClient.Configuration()
    configuration.scheduler = ManualScheduler()
    configuration.bufferedWritesInterval = .zero
    let client = DDPClient(transport: transport, configuration: configuration)
    client.defineStub("touch") { context in
        _ = try context.collection("c").insert(["n": 1])
        return nil
    }
    client.connect()
    client.waitUntilIdle() // `connect()` opens the transport on the client queue
    transport.open()
    transport.receive(#"{"msg":"connected","session":"s"}"#)
    client.waitUntilIdle() // handed to the client queue, not handled on this thread
    guard client.status.isConnected else { fatalError("the harness did not connect the client") }
    let subscription = client.subscribe("c")
    _ = try? client.call("touch") { _ in }
    _ = try? client.call("wait", options: MethodOptions(wait: true)) { _ in }
    for line in input.split(separator: "\n", omittingEmptySubsequences: true).prefix(64) {
        transport.receive(String(line).replacing("$SUB", with: subscription.id))
    }
    // A ping waits in the inbox for the next batch (the scheduler is manual): `waitUntilIdle` drains it now.
    transport.receive(#"{"msg":"ping","id":"fuzz-check"}"#)
    client.waitUntilIdle()
    if client.status.isConnected, !transport.sentFrames.contains(where: { $0.contains("fuzz-check") }) {
        fatalError("a connected client stopped answering pings after: \(input.prefix(500))")
    }
    client.close()
    return 0
}
