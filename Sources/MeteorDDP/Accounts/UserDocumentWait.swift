import Dispatch

/// A login whose result and `updated` arrived, waiting for the user's document to be in the cache before it
/// completes (Meteor's `callLoginMethod` waits for `Meteor.user()` in a `Tracker.autorun` before its callbacks and
/// `onLogin`, and sets `loggingIn` to false only then): a Meteor 3 server restarts the user's publication after the
/// login's `updated`, so the document may come after the result.
struct UserDocumentWait {
    /// The account the login made.
    let account: Account
    /// The database's waiter for the document (``Database/whenDocumentExists(_:_:)``).
    let waiter: Int
    /// The bound (``DDPClient/Configuration/loginUserDocumentTimeout``).
    let deadline: any ScheduledAction
    /// Runs on the client queue with whether the document arrived for this login.
    let done: (Result<Void, any Error>) -> Void
}

extension DDPClient {
    /// The key of a user's document.
    static func userDocumentKey(_ userID: String) -> DocumentKey {
        DocumentKey(collectionName: "users", documentID: userID)
    }

    /// Runs `done` on the client queue once `account`'s user document is in the cache (at once if it is), or with
    /// ``AccountError/Kind/userDocumentNotReceived`` after ``Configuration/loginUserDocumentTimeout``, or when the
    /// account changed meanwhile (a logout, another login). `close()` ends every wait (``endUserDocumentWaits()``).
    func awaitUserDocument(of account: Account, _ done: @escaping (Result<Void, any Error>) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        let key = Self.userDocumentKey(account.userID)
        nextUserDocumentWait += 1
        let token = nextUserDocumentWait
        let waiter = database.whenDocumentExists(key) { [weak self] in
            guard let self else { return }
            // On the committing thread: the decision is the client queue's.
            self.queue.async { self.endUserDocumentWait(token, arrived: true) }
        }
        guard let waiter else { return done(.success(())) }
        let timeout = configuration.loginUserDocumentTimeout
        let deadline = scheduler.schedule(after: timeout) { [weak self] in
            guard let self else { return }
            self.queue.async { self.endUserDocumentWait(token, arrived: false) }
        }
        userDocumentWaits[token] = UserDocumentWait(account: account, waiter: waiter, deadline: deadline, done: done)
    }

    private func endUserDocumentWait(_ token: Int, arrived: Bool) {
        guard let wait = userDocumentWaits.removeValue(forKey: token) else { return }
        wait.deadline.cancel()
        let key = Self.userDocumentKey(wait.account.userID)
        database.cancelDocumentWaiter(key, token: wait.waiter)
        // The same user with a new token (a resume, `logoutOtherClients`) is still this login's user.
        guard account?.userID == wait.account.userID else {
            return wait.done(
                .failure(
                    AccountError(
                        .userDocumentNotReceived,
                        "the client logged out or logged in again before user \(wait.account.userID)'s document came")))
        }
        guard arrived else {
            let timeout = configuration.loginUserDocumentTimeout
            return wait.done(
                .failure(
                    AccountError(
                        .userDocumentNotReceived,
                        "the server logged user \(wait.account.userID) in but did not publish the user's document "
                            + "to this client within \(timeout) (is the accounts package's publication of the "
                            + "logged-in user removed?)")))
        }
        wait.done(.success(()))
    }

    /// The account changed to `account` (a logout, another user's login): the waits for other users fail now.
    func endUserDocumentWaits(superseded account: Account?) {
        dispatchPrecondition(condition: .onQueue(queue))
        for (token, wait) in userDocumentWaits.sorted(by: { $0.key < $1.key })
        where wait.account.userID != account?.userID {
            endUserDocumentWait(token, arrived: false)
        }
    }

    /// `close()`: every login still waiting for its user's document fails with ``DDPError/Code/clientClosed``.
    func endUserDocumentWaits() {
        dispatchPrecondition(condition: .onQueue(queue))
        let waits = userDocumentWaits
        userDocumentWaits = [:]
        for (_, wait) in waits.sorted(by: { $0.key < $1.key }) {
            wait.deadline.cancel()
            database.cancelDocumentWaiter(Self.userDocumentKey(wait.account.userID), token: wait.waiter)
            wait.done(.failure(DDPError.clientClosed()))
        }
    }
}
