import EJSON
import Foundation

extension Notification.Name {
    /// Posted by a ``DDPClient`` when its ``DDPClient/account`` changes (logged in, resumed, logged out);
    /// `userInfo[DDPClient.accountUserInfoKey]` holds the new `Account?`. Posted on the callback queue.
    public static let ddpClientAccountDidChange = Notification.Name("MeteorDDP.DDPClient.accountDidChange")
}

// MARK: - Accounts

extension DDPClient {
    /// The key of the new `Account?` in a `ddpClientAccountDidChange` notification.
    public static let accountUserInfoKey = "account"

    /// The logged-in account, if any.
    public var account: Account? { publishedLogin.withLockedValue { $0.account } }

    /// Whether a login is in progress: a login method called here, or the resume of an account restored from the
    /// ``Configuration/accountStore`` at start-up (Meteor's `loggingIn()`); a reconnect's resume does not count.
    public var loggingIn: Bool { publishedLogin.withLockedValue { $0.loggingIn } }

    /// The account now and every change after it (a consumer that falls behind keeps the newest 16).
    /// ``loginEvents`` says why it changed.
    public var accountUpdates: AccountUpdates { AccountUpdates(stream: accountBroadcaster.makeStream()) }

    /// Every login, failed login and logout from now on, in the order they happened (Meteor's `Accounts.onLogin`,
    /// `onLoginFailure` and `onLogout`), each after the ``account`` it leaves is set. A consumer that falls behind
    /// keeps the newest 64 events. The sequence ends when the client closes.
    ///
    /// A client that starts logged out because its stored token had expired says so in ``logoutReason`` (it happened
    /// before any stream existed).
    public var loginEvents: LoginEvents { LoginEvents(stream: loginEventBroadcaster.makeStream()) }

    /// Why the client is logged out, when it was logged in before: after ``logout()``, a refused resume, an expired
    /// token (also one found expired in the ``Configuration/accountStore`` at start-up, never sent). `nil` while
    /// logged in, and when the client was never logged in.
    public var logoutReason: LogoutReason? { publishedLogin.withLockedValue { $0.logoutReason } }

    /// Logs in with an email address and password. The password leaves the process only as Meteor's SHA-256 digest.
    ///
    /// For example:
    /// ```swift
    /// let account = try await client.login(email: "ada@example.com", password: "correct horse")
    /// ```
    /// - Throws: the server's ``MeteorError`` (for example 403, "Incorrect password"), ``MethodError`` for a local
    ///   failure, ``AccountError``.
    @discardableResult
    public func login(email: String, password: String) async throws -> Account {
        try await login(params: ["user": ["email": .string(email)], "password": Self.hashedPassword(password)])
    }

    /// Logs in with a username and password.
    @discardableResult
    public func login(username: String, password: String) async throws -> Account {
        try await login(params: ["user": ["username": .string(username)], "password": Self.hashedPassword(password)])
    }

    /// Logs in with a resume token (for example one stored by another client).
    @discardableResult
    public func login(resumeToken: String) async throws -> Account {
        try await login(params: ["resume": .string(resumeToken)])
    }

    /// Creates a user and logs in as it (Meteor's `Accounts.createUser`).
    ///
    /// - Throws: ``MeteorError`` 400 "Password may not be empty" for an empty password (nothing is sent, as Meteor's
    ///   client refuses it), the server's ``MeteorError`` (403 "Username already exists."), ``MethodError`` for a
    ///   local failure, ``AccountError``.
    @discardableResult
    public func createUser(username: String? = nil, email: String? = nil, password: String, profile: EJSONValue? = nil)
        async throws -> Account
    {
        guard !password.isEmpty else { throw MeteorError(error: 400, reason: "Password may not be empty") }
        var options = EJSONObject()
        if let username { options["username"] = .string(username) }
        if let email { options["email"] = .string(email) }
        options["password"] = Self.hashedPassword(password)
        if let profile { options["profile"] = profile }
        return try await login(method: "createUser", params: .object(options))
    }

    /// Calls any login method (Meteor's `Accounts.callLoginMethod`): a wait method, so nothing runs beside it and
    /// later calls wait for it. On success the account is stored and resumed first on every reconnect. A cancelled
    /// task returns at once with `CancellationError` (the login itself goes on).
    @discardableResult
    public func login(method: String = "login", params: EJSONValue) async throws -> Account {
        try await login(method: method, arguments: [params])
    }

    /// Calls a login method with these arguments (`resetPassword(token, digest)` takes two).
    func login(method: String, arguments: [EJSONValue]) async throws -> Account {
        try await withCancellableContinuation { resume in
            queue.async {
                self.callLoginMethod(method, arguments: arguments) { resume($0) }
            }
        }
    }

    /// Logs out: the server invalidates the token, and the account is cleared here and in the store.
    ///
    /// With the offline store on, it returns once the last user's data is erased from the disk (the cache unless
    /// ``Persistence/keepsCacheOnLogout``, the calls, the subscriptions): a process that exits right after leaves
    /// nothing of the user's for the next launch.
    ///
    /// On a closed client (or one closed before the server answered) the account is still cleared here and in the
    /// stores, but no server was told: the token stays valid there until it expires, and this throws
    /// ``MethodError`` of kind ``MethodError/Kind/clientClosed`` to say so. Any other failure leaves the account as
    /// it was (Meteor's `logout`).
    public func logout() async throws {
        var notToldTheServer: MethodError?
        do {
            _ = try await call("logout", params: [], options: MethodOptions(wait: true))
        } catch let error as MethodError where error.kind == .clientClosed {
            notToldTheServer = error
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.logOut(.app)
                // Returns once the erasure is on disk: a process that exits right after finds nothing of this user's.
                self.clearPersistenceOnLogout { continuation.resume() }
            }
        }
        if let notToldTheServer { throw notToldTheServer }
    }

    // MARK: - Machinery

    static func hashedPassword(_ password: String) -> EJSONValue {
        ["digest": .string(MeteorPassword.digest(password)), "algorithm": "sha-256"]
    }

    /// Restores a stored account at start-up: its token is resumed first on the first connection. As Meteor's
    /// auto-login at start-up (accounts-base's `loginWithToken`, unlike a reconnect's resume), ``loggingIn`` is true
    /// from here until that resume completes; the account is presented meanwhile (Meteor's `setUserId` from storage).
    func restoreStoredAccount() {
        guard let store = configuration.accountStore else { return }
        do {
            guard let stored = try store.load() else { return }
            // Meteor's `_unstoreLoginTokenIfExpiresSoon` at start-up: such a token is never sent.
            if stored.expiresSoon(now: scheduler.now) {
                logger.info("the stored login token has expired or expires within the hour; starting logged out")
                try store.save(nil)
                queue.sync { handle(.storedAccountExpired) }
                return
            }
            queue.sync { handle(.storedAccountRestored(stored)) }
            accountBroadcaster.yield(stored)
        } catch {
            logger.debug("stored account unusable; starting logged out", metadata: ["error": "\(error)"])
            try? store.save(nil)
        }
    }

    private func callLoginMethod(
        _ method: String, arguments: [EJSONValue], resuming: Bool = false,
        completion: @escaping @Sendable (Result<Account, any Error>) -> Void
    ) {
        dispatchPrecondition(condition: .onQueue(queue))
        if !resuming { handle(.loginStarted) }
        // Never written to the offline store, whatever the method's name: its parameters are credentials.
        var options = MethodOptions.credentials(wait: true)
        // As the result arrives (Meteor's onResultReceived): a reconnect before `updated` resumes with this token.
        options.onResultReceivedOnClientQueue = { [weak self] result in
            guard let self, case .success(let value) = result, let token = value?["token"]?.stringValue else { return }
            self.handle(.resumeTokenChanged(token))
        }
        do {
            try call(method, params: arguments, options: options) { [weak self] result in
                guard let self else { return }
                self.queue.async { self.loginCompleted(result, resuming: resuming, completion: completion) }
            }
        } catch {
            handle(.loginEnded(resuming: resuming))
            completion(.failure(error))
        }
    }

    private func loginCompleted(
        _ result: Result<EJSONValue?, any Error>,
        resuming: Bool,
        completion: @escaping @Sendable (Result<Account, any Error>) -> Void
    ) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch result {
        case .success where core.isClosed:
            // Closed between the answer and now: no account is set (or stored) any more, and nothing waits for it.
            handle(.loginEnded(resuming: resuming))
            completion(.failure(DDPError.clientClosed()))
        case .success(let value):
            do {
                let account = try Account(loginResult: value)
                handle(.resumeTokenChanged(account.token))
                // Meteor's makeClientLoggedIn: the account is set (and stored) now; the login completes once its
                // user's document is in the cache (Meteor waits for `Meteor.user()` before its callbacks).
                setAccount(account, clearingLogoutReason: true)
                let type = value?["type"]?.stringValue.map(LoginType.init(rawValue:)) ?? .unknown
                awaitUserDocument(of: account) { [weak self] outcome in
                    guard let self else { return }
                    self.handle(.loginEnded(resuming: resuming))
                    switch outcome {
                    case .success:
                        self.loginEventBroadcaster.yield(.loggedIn(account, type: type))
                        completion(.success(account))
                    case .failure(let error):
                        self.logger.info("login completed without its user", metadata: ["error": "\(error)"])
                        completion(.failure(error))
                    }
                }
            } catch {
                handle(.loginEnded(resuming: resuming))
                logger.debug("login result unusable; logged out", metadata: ["error": "\(error)"])
                loginEventBroadcaster.yield(.loginFailed(error, isResume: resuming))
                logOut(.loginFailed(error))
                completion(.failure(error))
            }
        case .failure(let error):
            handle(.loginEnded(resuming: resuming))
            // Closing the client fails the resume without the server having refused the token: the account stays
            // (and stays stored, for the next start).
            guard (error as? MethodError)?.kind != .clientClosed else {
                completion(.failure(error))
                return
            }
            loginEventBroadcaster.yield(.loginFailed(error, isResume: resuming))
            if resuming {
                logger.debug("resume login failed; logged out", metadata: ["error": "\(error)"])
                logOut(LogoutReason(resumeError: error))
            }
            completion(.failure(error))
        }
    }

    /// A new socket's resume (``ClientCore/SocketReset/resumeToken``): with the stored login's token if there is one
    /// (Meteor's `_storedLoginToken()`), else the newest result's; or a logout when the token expires soon.
    func resumeLogin(token: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        let current = account
        if let current, current.expiresSoon(now: scheduler.now) {
            handle(.loginEnded(resuming: true))
            logger.info("the login token has expired or expires within the hour; logged out instead of resuming")
            logOut(.tokenExpired(nil))
            return
        }
        callLoginMethod("login", arguments: [["resume": .string(current?.token ?? token)]], resuming: true) { _ in }
    }

    /// Meteor's `makeClientLoggedOut`: no resume from now on, the account cleared here and in the store, and a
    /// ``LoginEvent/loggedOut(userID:reason:)`` when there was an account (Meteor's `onLogout` runs only then: a
    /// client is logged out once).
    ///
    /// Logged out by anything but ``logout()`` (which erases and waits for it itself), the offline store forgets the
    /// last user's data as a logout does. When their token expired or was revoked, their calls still unanswered go
    /// too (they were made before the refusal): nothing of theirs is left on the disk. A resume that failed for
    /// another reason (a rate limit, a server error) keeps those calls durable: they are the user's own work, sent
    /// now, and leave the store once answered.
    func logOut(_ reason: LogoutReason) {
        dispatchPrecondition(condition: .onQueue(queue))
        handle(.logoutRequired(reason))
    }

    /// Performs ``ClientCore/Action/loggedOut(userID:reason:)``: the offline store forgets the user as `reason` says,
    /// and the event is broadcast.
    func loggedOut(userID: String, reason: LogoutReason) {
        logger.info("logged out", metadata: ["reason": "\(reason)"])
        switch reason {
        case .app: break // logout() erases and waits for it itself
        case .tokenExpired, .tokenRevoked: clearPersistenceOnLogout(keepingUnansweredCalls: false) {}
        case .loginFailed: clearPersistenceOnLogout(keepingUnansweredCalls: true) {}
        }
        loginEventBroadcaster.yield(.loggedOut(userID: userID, reason: reason))
    }

    /// Sets the account (a successful login also clears ``DDPClient/logoutReason``, in the same decision).
    func setAccount(_ account: Account?, clearingLogoutReason: Bool = false) {
        handle(.accountSet(account, clearingLogoutReason: clearingLogoutReason))
    }

    /// Performs ``ClientCore/Action/accountChanged(_:)``: the new account is stored, broadcast and notified.
    func accountChanged(_ account: Account?) {
        // A login still waiting for its user's document fails now: the client logged out or in as someone else.
        endUserDocumentWaits(superseded: account)
        if let store = configuration.accountStore {
            do { try store.save(account) } catch { logger.debug("account not stored", metadata: ["error": "\(error)"]) }
        }
        accountBroadcaster.yield(account)
        userCode.run {
            NotificationCenter.default.post(
                name: .ddpClientAccountDidChange, object: self, userInfo: [DDPClient.accountUserInfoKey: account as Any]
            )
        }
    }
}
