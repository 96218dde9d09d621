import Foundation
import XCTest

@testable import MeteorDDP

/// Addresses as Meteor developers type them become the WebSocket URL `DDP.connect` would use.
final class ServerURLTests: XCTestCase {
    func testWebAddressesBecomeTheirWebSocketURL() {
        let cases: [(String, String?)] = [
            ("http://localhost:3000", "ws://localhost:3000/websocket"),
            ("http://localhost:3000/", "ws://localhost:3000/websocket"),
            ("https://app.example.com", "wss://app.example.com/websocket"),
            ("https://example.com/app", "wss://example.com/app/websocket"),
            ("HTTPS://example.com/app/", "wss://example.com/app/websocket"),
            ("localhost:3000", "ws://localhost:3000/websocket"),
            ("127.0.0.1:3000", "ws://127.0.0.1:3000/websocket"),
            ("ws://localhost:3000/websocket", "ws://localhost:3000/websocket"),
            ("wss://example.com/custom", "wss://example.com/custom"),
            ("/relative", nil),
            ("", nil),
            ("ftp://example.com", nil),
            ("http://", nil)
        ]
        for (typed, expected) in cases {
            XCTAssertEqual(ServerURL.webSocketURL(typed)?.absoluteString, expected, typed)
        }
    }

    func testTheClientTranslatesAnHTTPURL() {
        XCTAssertEqual(
            ServerURL.translating(URL(string: "http://localhost:3000")!).absoluteString, "ws://localhost:3000/websocket"
        )
        XCTAssertEqual(ServerURL.translating(URL(string: "ws://h:1/websocket")!).absoluteString, "ws://h:1/websocket")
    }
}
