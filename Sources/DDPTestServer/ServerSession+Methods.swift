import Dispatch
import EJSON
import MeteorDDP

// MARK: - Methods (server queue)

extension ServerSession {
    /// Runs a method behind the session's write fence: the data messages it causes for this session, then `updated`,
    /// then `result` (or, in the server's result-first mode, `result` before the data).
    func runMethod(id: String, name: String, params: [EJSONValue], seed: String?, server: DDPTestServer) {
        server.noteRun(ofCall: id, inSession: self.id)
        guard let handler = server.methodHandler(name) else {
            send([
                .result(
                    id: id, result: nil, error: MeteorError(error: .number(404), reason: "Method '\(name)' not found")),
                .updated(methodIDs: [id])
            ])
            return
        }
        if let refusal = server.rateLimiter.check(.method, name: name, connection: ObjectIdentifier(self)) {
            send([.result(id: id, result: nil, error: refusal), .updated(methodIDs: [id])])
            return
        }
        let context = MethodContext(
            name: name, params: params, userID: userID, randomSeed: seed, session: self, server: server)
        fence = []
        let outcome: Result<EJSONValue?, MeteorError>
        do {
            outcome = .success(try handler(context))
        } catch {
            outcome = .failure(Self.clientSafe(error))
        }
        let republishLater = server.republishesAfterLogin
        var userChanged = false
        if let newUser = context.newUserID, newUser != userID {
            userID = newUser
            userChanged = true
            if republishLater == nil { rerunPublications() }
        }
        let held = fence ?? []
        fence = nil
        let result: ServerMessage
        switch outcome {
        case .success(let value): result = .result(id: id, result: value, error: nil)
        case .failure(let error): result = .result(id: id, result: nil, error: error)
        }
        if server.sendsResultBeforeData {
            send([result] + held + [.updated(methodIDs: [id])])
        } else {
            send(held + [.updated(methodIDs: [id]), result])
        }
        if userChanged, let republishLater {
            // Meteor 3: the publications restart after the method's answer, not inside its fence.
            server.queue.asyncAfter(deadline: DispatchTime.now() + Self.interval(republishLater)) { [weak self] in
                self?.rerunPublications()
            }
        }
    }
}
