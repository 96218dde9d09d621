import EJSON

/// How the client reads a frame, on the transport's thread.
extension DDPClient {
    /// Reads a frame: `added` and `changed` straight into packed documents where ``DocumentMessageDecoder`` takes
    /// them, everything else (and anything it does not take) with the general parser, which reports every error.
    static func parse(
        _ frame: String, scratch: DocumentMessageDecoder.Scratch = .init(), options: EJSON.ParseOptions = .init()
    ) -> Result<IncomingMessage, DDPProtocolViolation> {
        if let document = DocumentMessageDecoder.decode(frame, scratch: scratch) {
            return .success(.document(document))
        }
        return parseGenerally(frame, options: options).map(IncomingMessage.message)
    }

    /// Reads a frame with the general parser (EJSON.parse, then ``ServerMessage``). A frame that does not parse
    /// keeps the ids it names for whoever waits on them (``UnreadableFrame``).
    static func parseGenerally(_ frame: String, options: EJSON.ParseOptions = .init()) -> Result<
        ServerMessage, DDPProtocolViolation
    > {
        var violation: DDPProtocolViolation
        do {
            return .success(try ServerMessage(ejson: try EJSON.parse(frame, options: options)))
        } catch let error as DDPProtocolViolation {
            violation = error
        } catch {
            violation = DDPProtocolViolation(.malformedJSON("\(error)"), frame: frame)
        }
        violation.unreadable = UnreadableFrame(frame: frame)
        return .failure(violation)
    }
}
