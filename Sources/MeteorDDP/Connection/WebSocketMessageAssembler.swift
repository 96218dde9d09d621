import NIOCore
import NIOWebSocket
import WSClient

/// Joins WebSocket data frames into messages, enforcing the message size limit and UTF-8 validity of text.
///
/// swift-websocket can do this too, but it reports a failure as an internal error and then waits for the server's
/// close frame before its connection ends: a hostile server that never answers stalled the client for the close
/// timeout, and the close code was lost. Assembling here lets ``WebSocketConnection`` report the failure with its
/// code at once.
struct WebSocketMessageAssembler {
    /// A complete message.
    enum Message: Equatable {
        case text(String)
        case binary(byteCount: Int)
    }

    /// Why the server's frames cannot be read; the connection is closed with ``code``.
    struct Failure: Error, Equatable {
        let code: WebSocketErrorCode
        let transportError: TransportError
    }

    private let maxFrameSize: Int
    private let maxMessageSize: Int
    private var partial: ByteBuffer?
    private var partialIsText = false

    init(maxFrameSize: Int, maxMessageSize: Int) {
        self.maxFrameSize = maxFrameSize
        self.maxMessageSize = maxMessageSize
    }

    /// Takes the next data frame; returns the message it completes, if any.
    mutating func append(_ frame: WebSocketDataFrame) throws(Failure) -> Message? {
        guard frame.data.readableBytes <= maxFrameSize else {
            throw Failure(
                code: .messageTooLarge,
                transportError: TransportError(
                    .messageTooLarge,
                    "the server sent a frame of \(frame.data.readableBytes) bytes, more than \(maxFrameSize); "
                        + "closed with code 1009"
                )
            )
        }
        switch frame.opcode {
        case .text, .binary:
            guard partial == nil else {
                throw Self.protocolError("a new message started before the previous one finished")
            }
            guard frame.data.readableBytes <= maxMessageSize else { throw tooLarge(frame.data.readableBytes) }
            if frame.fin { return try Self.message(frame.data, isText: frame.opcode == .text) }
            partial = frame.data
            partialIsText = frame.opcode == .text
            return nil
        case .continuation:
            guard var buffer = partial else { throw Self.protocolError("a continuation frame without a message") }
            partial = nil // keeps `buffer` uniquely referenced, so the append does not copy it
            let size = buffer.readableBytes + frame.data.readableBytes
            guard size <= maxMessageSize else { throw tooLarge(size) }
            var data = frame.data
            buffer.writeBuffer(&data)
            if frame.fin { return try Self.message(buffer, isText: partialIsText) }
            partial = buffer
            return nil
        }
    }

    private static func message(_ buffer: ByteBuffer, isText: Bool) throws(Failure) -> Message {
        guard isText else { return .binary(byteCount: buffer.readableBytes) }
        guard
            let text = buffer.readableBytesView.withContiguousStorageIfAvailable({ String(validatingUTF8Bytes: $0) })
                ?? String(validatingUTF8Bytes: Array(buffer.readableBytesView))
        else {
            throw Failure(
                code: .dataInconsistentWithMessage,
                transportError: TransportError(
                    .invalidUTF8, "the server sent a text message that is not valid UTF-8; closed with code 1007")
            )
        }
        return .text(text)
    }

    private func tooLarge(_ size: Int) -> Failure {
        Failure(
            code: .messageTooLarge,
            transportError: TransportError(
                .messageTooLarge,
                "the server sent a message of more than \(maxMessageSize) bytes (at least \(size)); "
                    + "closed with code 1009"
            )
        )
    }

    private static func protocolError(_ reason: String) -> Failure {
        Failure(
            code: .protocolError, transportError: TransportError(.protocolError, "\(reason); closed with code 1002"))
    }
}

extension String {
    /// The string these bytes encode, or `nil` if they are not valid UTF-8 (never repaired).
    init?(validatingUTF8Bytes bytes: some Collection<UInt8>) {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
            self.init(validating: bytes, as: UTF8.self)
        } else {
            // Decoding repairs invalid sequences with U+FFFD, which never equals the bytes it replaces.
            let decoded = String(decoding: bytes, as: UTF8.self)
            guard decoded.utf8.elementsEqual(bytes) else { return nil }
            self = decoded
        }
    }
}
