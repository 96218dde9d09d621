/// What the client does while its app is in the background (``DDPClient/didEnterBackground()``), set in
/// ``DDPClient/Configuration/backgroundPolicy``.
///
/// iOS suspends an app soon after it leaves the foreground: its socket then hears nothing, its timers stop, and the
/// server drops it after its heartbeat timeout. Whatever the policy, coming back (``DDPClient/willEnterForeground()``)
/// does not trust a socket that heard nothing for longer than the heartbeat interval: it is pinged with a short
/// deadline and replaced at once if no answer comes.
public enum BackgroundPolicy: Sendable, Hashable {
    /// Nothing changes while the OS lets the process run (the default).
    case keepConnection
    /// The client sends no ping and expects none answered until the app comes back (a socket the OS keeps open is
    /// not closed for a missed heartbeat; the server may still close it).
    case pauseHeartbeats
    /// After `after` in the background the client disconnects (the server ends the session at once, freeing its
    /// subscriptions); it connects again when the app comes back. A shorter stay keeps the connection.
    case disconnect(after: Duration)
}
